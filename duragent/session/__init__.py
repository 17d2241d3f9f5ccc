"""Session actors (pykka), the registry, the one turn runner and the agentic loop.

Every front end calls the turn runner here; nothing else orchestrates a turn.
(Populated by the durable-sessions and agentic-loop work; see specs/.)
"""
