"""Observability: what the process tells its operator, and nothing it acts on.

- ``metrics``: Prometheus metrics, one registry per runtime, recorded where things happen.
- ``logctx``: who a log line is about (session, agent, front end, turn), carried by
  contextvars across threads and tasks.
- ``jsonlog``: one JSON object per line for log shippers (``serve --log-format json``).
- ``logrepeat``: bounds a flood of identical records without hiding what is new.
- ``redact``: keeps known secrets (tokens, keys) out of every log line.

Below every layer but ``core`` and ``errors``: each layer records into it, none depends on
what it records.
"""
