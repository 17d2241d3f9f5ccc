"""The OpenAI-compatible API: ``POST /v1/chat/completions`` and ``GET /v1/models``.

- ``routes``: maps OpenAI's request onto a durable session and a normal turn, and back;
- ``wire``: OpenAI's chat-completions JSON (request, completion, error), nothing else;
- ``parts``: the new message's ``image_url`` data parts, decoded and checked as uploads;
- ``stream``: a turn as ``chat.completion.chunk`` events (the lifecycle is ``api.stream``'s);
- ``text``: what a completion says (every model call's words, the same streamed or not);
- ``errors``: middleware turning every problem+json answer under ``/v1/`` into OpenAI's shape.
"""
