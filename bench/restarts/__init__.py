"""SIGKILL campaigns: a session worker, and ``duragent serve`` behind each chat front end,
killed at random and restarted; nothing acknowledged may be lost or answered twice."""
