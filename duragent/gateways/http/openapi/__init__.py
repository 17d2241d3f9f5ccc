"""The hand-written OpenAPI 3.1 document served at ``/openapi.json``.

- ``document``: the document and the paths of duragent's own API;
- ``schemas``: response helpers, shared schemas and the stream's events the paths use;
- ``openai_paths``: the paths of the OpenAI-compatible API, with OpenAI's error shape;
- ``attachment_paths``: a message's body with attachments, ``Attachment``, and the download.

A route module may carry its own paths (``api.pins.pin_paths``); ``document`` merges them.
"""
