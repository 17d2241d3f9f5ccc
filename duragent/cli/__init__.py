"""The ``duragent`` command line: init, serve, agent, doctor (and later chat, attach, session)."""
