"""What a message's attachments read as in a request's text: a line each, then its text."""

from __future__ import annotations

from duragent.agents.chat_files import chat_file
from duragent.context.attachment_lines import (
    BLIND,
    LEFT_OUT,
    AttachmentPolicy,
    aged_note,
    attachment_text,
    described,
    inline_text,
    inlines,
)
from duragent.context.tokens import EstimateCounter, TokenCounter
from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.messages import Message
from duragent.llm.image_size import FittedImage

COUNTER = TokenCounter(EstimateCounter())
PHOTO_BYTES = b"photo"


POLICY = AttachmentPolicy(
    sees=True, folder="files/s1", file_name=chat_file, inline_tokens=50, strategy="head"
)


def attachment(
    kind: AttachmentKind,
    *,
    name: str | None = None,
    mime: str = "image/jpeg",
    size: int = 1_234_567,
    data: bytes = PHOTO_BYTES,
    transcript: str | None = None,
    width: int | None = None,
    height: int | None = None,
) -> Attachment:
    return Attachment(
        kind=kind,
        mime=mime,
        size=size,
        sha256=content_hash(data),
        name=name,
        transcript=transcript,
        width=width,
        height=height,
    )


PHOTO = attachment(AttachmentKind.IMAGE, name="beach.jpg", width=4032, height=3024)
FITTED = FittedImage(b"jpeg", "image/jpeg", 1024, 768)
HASH8 = content_hash(PHOTO_BYTES)[:8]


def test_an_image_a_model_cannot_see_is_its_placeholder_then_the_caption() -> None:
    message = Message.user("Our beach", (PHOTO,))
    text = attachment_text(message, POLICY, [BLIND], [None])
    assert text == (
        "[image: beach.jpg, 1.2 MB, 4032×3024 — this model cannot see images — "
        f"open it at files/s1/{HASH8}-beach.jpg]\nOur beach"
    )


def test_a_fitted_image_has_no_line_when_sent_and_says_there_was_no_room_when_not() -> None:
    message = Message.user("look", (PHOTO,))
    assert attachment_text(message, POLICY, [FITTED], [None], shown=True) == "look"
    held = attachment_text(message, POLICY, [FITTED], [None])
    assert LEFT_OUT in held
    assert held.endswith("\nlook")


def test_an_old_image_says_it_is_no_longer_sent() -> None:
    message = Message.user("", (PHOTO,))
    text = attachment_text(message, POLICY, [aged_note(3)], [None])
    assert text.startswith("[image: beach.jpg")
    assert "no longer sent (older than 3 turns)" in text


def test_a_document_line_names_its_name_type_size_and_path() -> None:
    pdf = attachment(AttachmentKind.DOCUMENT, name="report.pdf", mime="application/pdf")
    text = attachment_text(Message.user("please read", (pdf,)), POLICY, [None], [None])
    assert text == (
        f"[document: report.pdf (application/pdf), 1.2 MB — open it at "
        f"files/s1/{HASH8}-report.pdf]\nplease read"
    )


def test_a_text_document_carries_its_text_cut_like_a_tool_result() -> None:
    data = ("line of notes " * 200).encode()
    notes = attachment(
        AttachmentKind.DOCUMENT, name="notes.txt", mime="text/plain", size=len(data), data=data
    )
    assert inlines(notes, POLICY)
    inlined = inline_text(data, POLICY, COUNTER)
    assert inlined is not None
    assert inlined.startswith("line of notes")
    assert "[truncated: kept first" in inlined
    text = attachment_text(Message.user("", (notes,)), POLICY, [None], [inlined])
    assert "— its text follows]\nline of notes" in text
    assert text.endswith("[end of notes.txt]")


def test_only_small_text_documents_are_inlined() -> None:
    def doc(mime: str, size: int = 100) -> Attachment:
        return attachment(AttachmentKind.DOCUMENT, name="f", mime=mime, size=size)

    assert inlines(doc("text/markdown"), POLICY)
    assert inlines(doc("application/json; charset=utf-8"), POLICY)
    assert inlines(doc("application/ld+json"), POLICY)
    assert not inlines(doc("application/pdf"), POLICY)
    assert not inlines(doc("text/plain", size=10_000_000), POLICY)
    assert not inlines(doc("text/plain"), AttachmentPolicy(sees=True))  # inlining off
    assert inline_text(b"\xff\xfe not utf-8 \xff", POLICY, COUNTER) is None


def test_a_transcribed_voice_note_is_marked_and_not_repeated() -> None:
    voice = attachment(AttachmentKind.VOICE, mime="audio/ogg", transcript="call me at six")
    said = attachment_text(Message.user("call me at six", (voice,)), POLICY, [None], [None])
    assert said == "[voice note, transcribed]\ncall me at six"
    elsewhere = attachment_text(Message.user("", (voice,)), POLICY, [None], [None])
    assert elsewhere == "[voice note, transcribed] call me at six"


def test_an_untranscribed_voice_note_and_a_video_are_placeholders_with_paths() -> None:
    voice = attachment(AttachmentKind.VOICE, mime="audio/ogg", size=48_000)
    video = attachment(AttachmentKind.VIDEO, name="clip.mp4", mime="video/mp4", data=b"v")
    text = attachment_text(Message.user("hm", (voice, video)), POLICY, [None, None], [None, None])
    first, second, caption = text.split("\n")
    assert first.startswith("[voice note (audio/ogg), 48 KB — not transcribed — open it at")
    assert second.startswith("[video: clip.mp4, 1.2 MB — open it at files/s1/")
    assert caption == "hm"


def test_a_file_name_is_shown_on_one_line() -> None:
    odd = attachment(AttachmentKind.DOCUMENT, name="a\nb\tc.txt", mime="application/pdf")
    line = attachment_text(Message.user("", (odd,)), POLICY, [None], [None])
    assert "\n" not in line
    assert line.startswith("[document: a b c.txt (application/pdf)")
    assert line.endswith("-a_b_c.txt]")  # the path as ``chat_file`` makes it safe


def test_a_described_message_names_what_it_carried_for_the_summariser() -> None:
    message = Message.user("Our beach", (PHOTO,))
    record = described(message, "files/s1", chat_file)
    assert record.text == (
        f"[image: beach.jpg, 1.2 MB, 4032×3024 — open it at files/s1/{HASH8}-beach.jpg]\nOur beach"
    )
    assert not record.attachments
    plain = Message.user("hello")
    assert described(plain) is plain
