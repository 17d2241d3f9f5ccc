"""duragent's own REST API under ``/api/v1`` (besides the agent routes kept in ``app``).

- ``sessions``: create, list, get, delete, end, messages (a synchronous turn), approve;
- ``stream``: a turn as Server-Sent Events, and the stream lifecycle the OpenAI stream shares;
- ``cut_turns``: what a client is told about a turn cut by a take-over;
- ``pins``: a session's pinned sections (routes and their OpenAPI paths);
- ``schedules``: the scheduler's desk, reached through the ``SchedulesPort`` it is handed;
- ``paging``: ``?limit=`` on list endpoints, clamped and saying so.
"""
