"""The scripted model's OpenAI stream: each content chunk is the whole chunk's JSON, per piece."""

from __future__ import annotations

import json

from duragent.testing import Reply
from duragent.testing.wire_openai import stream_events

PIECES = [
    "Hello ",
    'say "hi" ',
    "back\\slash ",
    "ünï — 日本 ",
    "line\nbreak ",
    "\ue000piece\ue000 ",
    "end",
]


def test_every_content_chunk_is_the_json_of_the_whole_chunk_with_its_piece() -> None:
    reply = Reply(text="".join(PIECES), chunks=PIECES)
    frames = stream_events(reply, request_index=3, model="m", include_usage=True)
    contents = frames[1 : 1 + len(PIECES)]
    for piece, frame in zip(PIECES, contents, strict=True):
        assert isinstance(frame, bytes)
        assert frame.startswith(b"data: ")
        assert frame.endswith(b"\n\n")
        data = json.loads(frame[6:-2])
        assert data["choices"] == [
            {"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}
        ]
        assert (data["id"], data["model"], data["usage"]) == ("chatcmpl-fake-3", "m", None)
        assert frame == f"data: {json.dumps(data)}\n\n".encode()
