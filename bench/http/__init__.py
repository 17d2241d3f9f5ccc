"""A real ``duragent serve`` over HTTP: turns (``api``), the accept cap, several nodes on
PostgreSQL, a hostile model; ``rig`` and the sections of ``api`` are not run on their own."""
