"""Files the agent sends, through the OpenAI endpoint: in the ``duragent`` extension, not the text.

The real ``openai`` SDK against a running server: the completion stays a valid OpenAI object
(the message is its role, content and refusal), its content is the agent's words, and the
extension lists each file with the path of its bytes, streamed or not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from duragent.gateways.http.openapi.document import openapi_document
from duragent.testing import Reply, ToolCallReply
from tests.frontkit.media_kit import png, sha256
from tests.gateways.http.api_fixtures import Served, served
from tests.gateways.http.openai.test_routes import sdk

SEND_FILE = "  tools:\n    - type: builtin\n      name: send_file\n"
PHOTO = png(24, 16)


def script(s: Served) -> None:
    """The agent sends ``chart.png`` with a caption, then says so."""
    (s.root / ".duragent" / "agents" / "bot" / "chart.png").write_bytes(PHOTO)
    call = ToolCallReply(name="send_file", arguments={"path": "chart.png", "caption": "Sales"})
    s.server.enqueue(Reply(tool_calls=[call]), Reply(text="Here is the chart."))


def listed(session_id: str) -> list[dict[str, Any]]:
    digest = sha256(PHOTO)
    return [
        {
            "kind": "image",
            "mime": "image/png",
            "size": len(PHOTO),
            "sha256": digest,
            "name": "chart.png",
            "caption": "Sales",
            "url": f"/api/v1/sessions/{session_id}/attachments/{digest}",
        }
    ]


async def test_a_completions_files_are_in_the_extension_with_a_url_to_their_bytes(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        script(s)
        async with sdk(s.runtime.http_port) as client:
            done = await client.chat.completions.create(
                model="bot", messages=[{"role": "user", "content": "the chart"}]
            )
        extension = (done.model_extra or {})["duragent"]
        got = await s.client.get(extension["attachments"][0]["url"])
    message = done.choices[0].message
    assert message.content == "Here is the chart."
    assert (message.model_extra or {}) == {}  # nothing OpenAI's message does not have
    assert extension["attachments"] == listed(extension["session_id"])
    assert got.content == PHOTO
    document = openapi_document("test")
    answers = document["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]
    schema = answers["content"]["application/json"]["schema"]
    jsonschema.validate(done.model_dump(), schema | {"components": document["components"]})
    assert set(extension) <= set(schema["properties"]["duragent"]["properties"])


async def test_a_streamed_completion_lists_the_files_in_its_last_chunks_extension(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        script(s)
        async with sdk(s.runtime.http_port) as client:
            stream = await client.chat.completions.create(
                model="bot", messages=[{"role": "user", "content": "the chart"}], stream=True
            )
            chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    extension = (chunks[-1].model_extra or {})["duragent"]
    assert text == "Here is the chart."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert extension["attachments"] == listed(extension["session_id"])


async def test_a_completion_without_files_has_no_attachments_in_its_extension(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        s.server.enqueue(Reply(text="Just words."))
        async with sdk(s.runtime.http_port) as client:
            done = await client.chat.completions.create(
                model="bot", messages=[{"role": "user", "content": "hi"}]
            )
    assert "attachments" not in (done.model_extra or {})["duragent"]
