"""Photos and files of a chat reach the model through the real turn runner, within budget.

Real runner and session store, the scripted model server over HTTP with ``strict_images``
(it refuses, as a provider would, an image too large, of the wrong type or mislabelled).
Photos are made with Pillow; what the server decodes is compared with ``fit_image``'s output.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from duragent.agents.chat_files import chat_file
from duragent.context.attachment_lines import AttachmentPolicy
from duragent.context.attachments import AttachmentView
from duragent.context.budget import BudgetReport
from duragent.context.tokens import counter_for_model
from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.messages import Message
from duragent.llm import images as llm_images
from duragent.llm.image_parts import human_size
from duragent.llm.image_size import ANTHROPIC_MAX_EDGE, ANTHROPIC_MAX_PIXELS, FittedImage
from duragent.llm.images import fit_image
from duragent.store.attachment_blobs import MemoryAttachments
from duragent.testing import Reply
from duragent.turns import Complete
from duragent.turns.images import FittedImages, TurnAttachments
from tests.turns.summary_fixtures import contents, is_summary_request, responder
from tests.turns.turn_fixtures import Harness, harness


def jpeg(width: int, height: int, shade: int = 0) -> bytes:
    """A photo-like JPEG (a gradient, so it does not compress to nothing)."""
    grey = Image.linear_gradient("L").resize((width, height))
    tint = Image.new("L", (width, height), shade)
    out = io.BytesIO()
    Image.merge("RGB", (grey, tint, grey.transpose(Image.Transpose.FLIP_LEFT_RIGHT))).save(
        out, "JPEG", quality=90
    )
    return out.getvalue()


async def send(
    h: Harness,
    sid: str,
    text: str,
    data: bytes = b"",
    *,
    kind: AttachmentKind = AttachmentKind.IMAGE,
    mime: str = "image/jpeg",
    name: str | None = None,
    size: tuple[int, int] | None = None,
) -> Attachment | None:
    """One turn: ``text`` with ``data`` attached (none when empty); its answer is checked."""
    kept = None
    if data:
        width, height = size if size is not None else (None, None)
        kept = await h.runner.attachments.keep(
            sid, data, kind=kind, mime=mime, name=name, width=width, height=height
        )
    accepted = await h.runner.accept(sid, text, attachments=(kept,) if kept else ())
    result = await h.runner.answer(sid, accepted.seq, text)
    assert isinstance(result, Complete), result
    return kept


def last_user_text(h: Harness) -> str:
    """The text of the latest request's last message (parts joined)."""
    content = h.server.last_request.body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content)


async def budgets(h: Harness, sid: str) -> list[dict[str, Any]]:
    events = await h.registry.handle(sid).events()
    return [e.data["budget"] for e in events if "budget" in e.data]


async def test_a_photo_reaches_a_model_that_can_see_as_its_fitted_image(tmp_path: Path) -> None:
    photo = jpeg(3000, 2000)
    async with harness(tmp_path) as h:  # gpt-4o, OpenAI-compatible
        h.server.strict_images = True
        h.server.enqueue(Reply(text="a gradient"))
        sid = await h.runner.start_session("bot")
        await send(h, sid, "what is this?", photo, size=(3000, 2000))
        images = h.server.images()
        content = h.server.last_request.body["messages"][-1]["content"]
        spent = await budgets(h, sid)
    expected = fit_image(photo, "openai")
    assert [(i.data, i.mime, i.width, i.height) for i in images] == [
        (expected.data, "image/jpeg", 1152, 768)
    ]
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert spent[-1]["images_sent"] == 1
    assert spent[-1]["request_tokens"] <= spent[-1]["limit"]


async def test_a_photo_reaches_claude_as_an_image_block_before_the_text(tmp_path: Path) -> None:
    photo = jpeg(4000, 3000)
    async with harness(tmp_path, provider="anthropic") as h:
        h.server.strict_images = True
        h.server.enqueue(Reply(text="a gradient"))
        sid = await h.runner.start_session("bot")
        await send(h, sid, "what is this?", photo)  # no pixels given: read from the image
        images = h.server.images()
        blocks = h.server.last_request.body["messages"][-1]["content"]
    # the image, then the message's text (after the quoted original task, in the same turn)
    assert [b["type"] for b in blocks][-2:] == ["image", "text"]
    assert blocks[-1]["text"] == "what is this?"
    (image,) = images
    assert image.data == fit_image(photo, "anthropic").data
    assert image.width is not None
    assert image.height is not None
    assert max(image.width, image.height) <= ANTHROPIC_MAX_EDGE
    assert image.width * image.height <= ANTHROPIC_MAX_PIXELS
    assert image.problem is None


async def test_a_model_that_cannot_see_gets_the_placeholder_and_the_caption(
    tmp_path: Path,
) -> None:
    photo = jpeg(800, 600)
    async with harness(tmp_path, model_extra="    vision: false\n") as h:
        h.server.enqueue(Reply(text="I cannot see it"))
        sid = await h.runner.start_session("bot")
        kept = await send(h, sid, "our beach", photo, size=(800, 600), name="beach.jpg")
        text = last_user_text(h)
        images = h.server.images()
    assert kept is not None
    path = f"files/{sid}/{chat_file(kept)}"
    assert images == []
    assert text.startswith("[image: beach.jpg")
    assert "800×600 — this model cannot see images — open it at " + path in text
    assert text.endswith("\nour beach")
    copy = tmp_path / ".duragent" / "agents" / "bot" / path
    assert copy.read_bytes() == photo  # the path the model is told is one its tools can open


async def test_after_attachment_turns_the_photo_becomes_a_placeholder(tmp_path: Path) -> None:
    photo = jpeg(640, 480)
    async with harness(tmp_path, model_extra="    attachment_turns: 2\n") as h:
        h.server.strict_images = True
        h.server.enqueue(*(Reply(text=f"answer {n}") for n in range(3)))
        sid = await h.runner.start_session("bot")
        kept = await send(h, sid, "look", photo, size=(640, 480))
        await send(h, sid, "the colours?")
        still = len(h.server.images())
        await send(h, sid, "anything else?")
        later = h.server.images()
        said = [m["content"] for m in h.server.last_request.body["messages"][1:]]
    assert still == 1  # its own turn and the next
    assert later == []
    (first,) = [text for text in said if text.endswith("\nlook")]
    assert kept is not None
    assert first.startswith(f"[image (image/jpeg), {human_size(kept.size)}, 640×480 — ")
    assert "no longer sent (older than 2 turns)" in first


async def test_a_tiny_window_with_several_big_photos_still_fits_placeholders_first(
    tmp_path: Path,
) -> None:
    extra = "    attachment_turns: 10\n"
    async with harness(tmp_path, max_input_tokens=4096, model_extra=extra) as h:
        h.server.strict_images = True
        h.server.enqueue(*(Reply(text=f"seen {n}") for n in range(4)))
        sid = await h.runner.start_session("bot")
        for n in range(4):  # each one ~765 tokens for gpt-4o (1024×768: 4 tiles)
            await send(h, sid, f"photo {n}", jpeg(2048, 1536, shade=40 * n), size=(2048, 1536))
        images = h.server.images()
        messages = h.server.last_request.body["messages"]
        spent = await budgets(h, sid)
    assert all(b["request_tokens"] <= b["limit"] for b in spent)
    last = spent[-1]
    assert "history_omitted" not in last  # images gave way; every earlier message is there
    assert last["images_sent"] >= 1
    assert last["images_left_out"] == 4 - last["images_sent"]
    quoted = "[Context quoted by the runtime"  # the original task, pinned
    users = [m for m in messages if m["role"] == "user" and quoted not in str(m["content"])]
    assert len(users) == 4
    shown = [isinstance(m["content"], list) for m in users]
    held = last["images_left_out"]
    assert shown == [False] * held + [True] * last["images_sent"]  # the newest are sent
    assert [i.message for i in images] == [messages.index(m) for m in users[held:]]
    for m in users[:held]:
        assert "— not sent: no room left in the context window — open it at" in m["content"]


async def test_a_document_line_names_the_path_its_tools_open(tmp_path: Path) -> None:
    pdf = b"%PDF-1.4 a small report"
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="reading it"))
        sid = await h.runner.start_session("bot")
        kept = await send(
            h,
            sid,
            "summarise this",
            pdf,
            kind=AttachmentKind.DOCUMENT,
            mime="application/pdf",
            name="report.pdf",
        )
        text = last_user_text(h)
    assert kept is not None
    path = f"files/{sid}/{chat_file(kept)}"
    assert text == (
        f"[document: report.pdf (application/pdf), 23 B — open it at {path}]\nsummarise this"
    )
    assert (tmp_path / ".duragent" / "agents" / "bot" / path).read_bytes() == pdf


async def test_a_long_chat_fits_each_photo_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fits: list[int] = []

    def counted(data: bytes, formula: Any, **options: Any) -> FittedImage:
        fits.append(len(data))
        return fit_image(data, formula, **options)

    monkeypatch.setattr(llm_images, "fit_image", counted)
    async with harness(tmp_path, model_extra="    attachment_turns: 5\n") as h:
        h.server.enqueue(*(Reply(text=f"answer {n}") for n in range(5)))
        sid = await h.runner.start_session("bot")
        await send(h, sid, "look", jpeg(1200, 900), size=(1200, 900))
        for n in range(4):
            await send(h, sid, f"question {n}")
        sent = [len(h.server.images(i)) for i in range(len(h.server.requests))]
    assert sent == [1, 1, 1, 1, 1]
    assert len(fits) == 1


async def test_a_summary_is_told_of_the_photo_it_replaces_never_its_bytes(tmp_path: Path) -> None:
    context = "{max_history_tokens: 400, summaries: {enabled: true}}"
    filler = "lorem ipsum dolor sit amet " * 12
    async with harness(tmp_path, responder=responder(), context=context) as h:
        sid = await h.runner.start_session("bot")
        kept = await send(h, sid, "our beach", jpeg(800, 600), size=(800, 600), name="beach.jpg")
        for i in range(8):
            await send(h, sid, f"message {i}: {filler}")
        first = next(r for r in h.server.requests if is_summary_request(r))
    assert kept is not None
    read = contents(first)
    size, path = human_size(kept.size), f"files/{sid}/{chat_file(kept)}"
    assert f"USER: [image: beach.jpg, {size}, 800×600 — open it at {path}]\nour beach" in read
    assert "base64" not in read


def memory_storage(blobs: dict[str, bytes]) -> MemoryAttachments:
    return MemoryAttachments(lambda: blobs, "s1")


def turn_attachments(blobs: dict[str, bytes], *, sees: bool = True) -> TurnAttachments:
    policy = AttachmentPolicy(sees=sees, folder="files/s1", file_name=chat_file)
    return TurnAttachments(
        AttachmentView(), policy, FittedImages(), memory_storage(blobs), counter_for_model("x")
    )


async def test_a_chat_without_attachments_is_carried_as_the_session_holds_it() -> None:
    turns = turn_attachments({})
    history = [Message.user("hi"), Message.assistant("hello"), Message.user("and?")]
    turn = [Message.assistant("thinking")]
    carried_history, carried_turn = await turns.prepare(history, turn)
    assert carried_history is history
    assert carried_turn is turn
    assert turns.carried(history) is history
    assert turns.show(history, BudgetReport(), 100) is history


async def test_the_summaries_tier_is_handed_the_messages_requests_carry() -> None:
    data = jpeg(300, 200)
    blobs = {content_hash(data): data}
    photo = Attachment(
        kind=AttachmentKind.IMAGE, mime="image/jpeg", size=len(data), sha256=content_hash(data)
    )
    history = [Message.user("look", (photo,)), Message.assistant("a gradient"), Message.user("?")]
    turns = turn_attachments(blobs)
    prepared, _ = await turns.prepare(history, [])
    carried = turns.carried(history)
    assert carried[0] is prepared[0]  # the same objects: the history cache is not rebuilt
    assert carried[0] is not history[0]
    assert carried[1:] == history[1:]
    assert turns.carried(history[1:])[0] is history[1]  # a summary took the photo away


async def test_an_image_that_is_not_one_is_a_placeholder_saying_why(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.strict_images = True
        h.server.enqueue(Reply(text="hm"))
        sid = await h.runner.start_session("bot")
        await send(h, sid, "see", b"GIF89a but not really an image", mime="image/gif")
        text = last_user_text(h)
        images = h.server.images()
    assert images == []
    assert "— could not be shown: this is not an image that can be shown to a model" in text
