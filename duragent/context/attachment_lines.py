"""What a message's attachments read as in a request's text: a line each, before its text.

A user message that carried photos, voice notes or files reaches the model in its terms
(``specs/202612051700.vision.md``, "How attachments reach a request"); this module writes the
text part, given what each attachment's state is this request (``context.attachments``
decides it):

- an **image** sent natively writes no line (the image part is there); any other image is
  ``attachment_placeholder``'s line saying why it is not sent (the model cannot see images;
  it is older than ``attachment_turns``; no room was left; it could not be read as an image)
  and where the agent's tools can open it;
- a **document** is a line with its name, type, size and path, and a text document under
  ``INLINE_BYTES`` carries its text after the line while it is recent, cut like a tool
  result (Layer 3a's head/tail and notice);
- a **voice note or audio** with a transcript is marked as one (``[voice note,
  transcribed]``): the message's text is the transcript already, so it is not repeated;
  without one it is a placeholder saying so; a **video** is a placeholder.

The lines come before the message's text (its caption), as Anthropic wants images before
text. The summariser reads these same lines (``turns.summariser``), so a summary can say
that a photo or a file was sent, never its bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from duragent.context.tokens import TokenCounter
from duragent.context.truncation import Strategy, truncate_tool_result
from duragent.core.attachments import Attachment, AttachmentKind
from duragent.core.messages import Message
from duragent.llm.image_parts import attachment_placeholder, human_size
from duragent.llm.image_size import FittedImage, ImageFormula

__all__ = [
    "ATTACHMENT_TURNS",
    "BLIND",
    "INLINE_BYTES",
    "LEFT_OUT",
    "AttachmentPolicy",
    "AttachmentState",
    "FileName",
    "aged_note",
    "attachment_text",
    "described",
    "inline_text",
    "inlines",
    "rejected_note",
]

ATTACHMENT_TURNS = 3
"""``spec.model.attachment_turns``'s default: an image is sent with its turn and the next two."""

INLINE_BYTES = 32_000
"""A text document up to this size has its text inlined (larger: only its line and path)."""

BLIND = "this model cannot see images"
LEFT_OUT = "not sent: no room left in the context window"

_NAME_CHARS = 120
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
        "application/csv",
    }
)

AttachmentState = FittedImage | str | None
"""One attachment's state in a request: an image that may be sent (fitted), or a note saying
why it is not (``BLIND``, ``aged_note``, ``rejected_note``); None for what has no state (a
document, a voice note), and for an image described without a note (``described``)."""


def aged_note(turns: int) -> str:
    """Why an image older than ``turns`` turns is a placeholder."""
    return f"no longer sent (older than {turns} turn{'s' if turns != 1 else ''})"


def rejected_note(reason: str) -> str:
    """Why an image that could not be fitted is a placeholder (``reason``: a sentence)."""
    return f"could not be shown: {reason.rstrip('.')}"


FileName = Callable[[Attachment], object]
"""An attachment's file name in its session's files folder (``agents.chat_files.chat_file``,
which context may not import: the turn passes it)."""


@dataclass(frozen=True, slots=True)
class AttachmentPolicy:
    """How one agent's requests in one session show attachments.

    ``sees``: images go to the model (``llm.vision.can_see``); ``formula`` counts and fits
    them (``image_size.formula_of``); ``turns`` is ``spec.model.attachment_turns``;
    ``folder`` is the session's files folder as the agent's tools name it
    (``files/<session id>``) and ``file_name`` a file's name in it (no path is named without
    both); ``inline_tokens``/``strategy`` cut an inlined text like a tool result (0: no
    inlining).
    """

    sees: bool
    formula: ImageFormula = "openai"
    turns: int = ATTACHMENT_TURNS
    folder: str = ""
    file_name: FileName | None = None
    inline_tokens: int = 0
    strategy: Strategy = "head"

    def path(self, attachment: Attachment) -> str | None:
        """Where the agent's tools open ``attachment`` (relative to the agent's folder)."""
        if not self.folder or self.file_name is None:
            return None
        return f"{self.folder}/{self.file_name(attachment)}"


def inlines(attachment: Attachment, policy: AttachmentPolicy) -> bool:
    """Whether ``attachment`` is a text document whose text a recent message carries."""
    if attachment.kind is not AttachmentKind.DOCUMENT or policy.inline_tokens <= 0:
        return False
    if attachment.size > INLINE_BYTES:
        return False
    mime = attachment.mime.split(";", 1)[0].strip().lower()
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml"))


def inline_text(data: bytes, policy: AttachmentPolicy, counter: TokenCounter) -> str | None:
    """A text document's text as a request carries it, cut like a tool result.

    None when the bytes are not UTF-8 text (a file that says ``text/plain`` and is not).
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    if "\x00" in text or not text.strip():
        return None
    return truncate_tool_result(text, policy.inline_tokens, policy.strategy, counter).text


def _clean(name: str | None) -> str | None:
    """A file name on one line and of a readable length (it is the sender's text)."""
    if name is None:
        return None
    one_line = " ".join(name.split())
    return one_line[:_NAME_CHARS] or None


def _named(attachment: Attachment) -> Attachment:
    clean = _clean(attachment.name)
    return attachment if clean == attachment.name else replace(attachment, name=clean)


def _document(attachment: Attachment, policy: AttachmentPolicy, inlined: str | None) -> str:
    name = _clean(attachment.name)
    what = f"document: {name} ({attachment.mime})" if name else f"document ({attachment.mime})"
    parts = [f"{what}, {human_size(attachment.size)}"]
    path = policy.path(attachment)
    if path:
        parts.append(f"open it at {path}")
    if inlined is None:
        return "[" + " — ".join(parts) + "]"
    parts.append("its text follows")
    return "[" + " — ".join(parts) + f"]\n{inlined}\n[end of {name or 'the document'}]"


def _sound(attachment: Attachment, text: str) -> str:
    noun = "voice note" if attachment.kind is AttachmentKind.VOICE else "audio"
    name = _clean(attachment.name)
    marker = f"[{noun}: {name}, transcribed]" if name else f"[{noun}, transcribed]"
    transcript = (attachment.transcript or "").strip()
    return marker if transcript in text else f"{marker} {transcript}"


def _line(
    attachment: Attachment,
    state: AttachmentState,
    policy: AttachmentPolicy,
    text: str,
    inlined: str | None,
    shown: bool,
) -> str | None:
    kind = attachment.kind
    if kind is AttachmentKind.IMAGE:
        if isinstance(state, FittedImage):
            if shown:
                return None
            note: str | None = LEFT_OUT
        else:
            note = state
        return attachment_placeholder(_named(attachment), note=note, path=policy.path(attachment))
    if kind is AttachmentKind.DOCUMENT:
        return _document(attachment, policy, inlined)
    if kind in (AttachmentKind.VOICE, AttachmentKind.AUDIO):
        if attachment.transcript and attachment.transcript.strip():
            return _sound(attachment, text)
        return attachment_placeholder(
            _named(attachment), note="not transcribed", path=policy.path(attachment)
        )
    return attachment_placeholder(_named(attachment), path=policy.path(attachment))


def attachment_text(
    message: Message,
    policy: AttachmentPolicy,
    states: Sequence[AttachmentState],
    inlined: Sequence[str | None],
    *,
    shown: bool = False,
) -> str:
    """``message``'s text in a request: a line per attachment (module docstring), then its text.

    ``states`` and ``inlined`` go with ``message.attachments`` one by one; ``shown``: the
    fitted images are sent as parts (their lines are left out), else each is a placeholder
    saying there was no room.
    """
    text = message.text
    lines = [
        line
        for attachment, state, inline in zip(message.attachments, states, inlined, strict=True)
        if (line := _line(attachment, state, policy, text, inline, shown)) is not None
    ]
    if not lines:
        return text
    return "\n".join([*lines, text]) if text else "\n".join(lines)


def described(message: Message, folder: str = "", file_name: FileName | None = None) -> Message:
    """``message`` as a record says what it carried: a line per attachment, no notes.

    What the summariser reads (``turns.summaries``): the lines name each photo, voice note
    and file (and, with ``folder`` and ``file_name``, where the agent's tools open it);
    bytes never.
    """
    if not message.attachments:
        return message
    policy = AttachmentPolicy(sees=False, folder=folder, file_name=file_name)
    nothing = [None] * len(message.attachments)
    return Message(role=message.role, content=attachment_text(message, policy, nothing, nothing))
