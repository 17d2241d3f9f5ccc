"""duragent's own REST API under ``/api/v1`` (besides the agent routes kept in ``app``).

- ``sessions``: create, list, get, delete, end, messages (a synchronous turn), approve, and
  an attachment's bytes;
- ``uploads``: a message's attachments as a request carries them (JSON base64 or a form:
  ``multipart``), checked against the limits; ``keeping``: kept before the message is
  submitted (an image's pixels read, a document copied where the agent's tools read it);
- ``attachments``: attachments going out: history's ``url`` and the download itself;
- ``stream``: a turn as Server-Sent Events, and the stream lifecycle the OpenAI stream shares;
- ``cut_turns``: what a client is told about a turn cut by a take-over;
- ``pins``: a session's pinned sections (routes and their OpenAPI paths);
- ``schedules``: the scheduler's desk, reached through the ``SchedulesPort`` it is handed;
- ``paging``: ``?limit=`` on list endpoints, clamped and saying so.
"""
