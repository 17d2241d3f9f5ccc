"""Durable files: session event logs and snapshots, schedules and run logs.

Owns every byte under ``.duragent/sessions`` and ``.duragent/schedules``: append-with-fsync
event logs, atomic snapshots, compaction and recovery reads. Imports only ``core``.
(Populated by the durable-sessions work; see specs/.)
"""
