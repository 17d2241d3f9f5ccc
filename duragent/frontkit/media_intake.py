"""``MediaIntake``: a message's photos, voice notes and files kept before the message is.

``ChatFront`` calls ``take`` for a message it will record and answer, once its session is
known. For each ``MediaRef``, in order:

1. **Limit** (``MediaLimits``): a declared size over the kind's limit is refused before any
   download; a source that finds more bytes than declared stops at the limit. The person is
   told (kind, size, limit); the message is still recorded with its caption, and the model is
   told in a line what was not kept.
2. **Known already?** (``MediaIndex``): a platform file this session holds (a redelivered
   update) is reused: no download, no transcription.
3. **Download** through the gateway's ``MediaSource``, tried again after ``retry_pauses``
   while it fails for a while; a file that cannot be had is told to the person like one
   over the limit.
4. **Read**: a voice note or audio transcribed (``MediaSettings.transcriber``; a failure
   leaves it untranscribed); with no transcriber the chat is told once how to set one up.
5. **Keep** the bytes in the session (``TurnRunner.attachments.keep``: content-addressed,
   fsync'd), then read an image's pixels and type from its header (Pillow reads no more) and
   note the platform file in the index: all three in one worker thread's hop (``keep``'s
   ``then``), not a hop each.
6. **Documents** are copied to the chat's files folder in the agent's folder
   (``agents.chat_files``), where its tools read them; written atomically, skipped when there.

The message's text is then what the person said: the transcripts, the caption, and a line per
file not kept (the model learns of it only so); it may be empty (a photo without a caption).
The kept files reach the model from the attachments themselves (``context.attachment_lines``:
an image's part or placeholder, a document's name, type, size and path in the files folder).
``ChatFront`` submits the text with the attachments, so its ``user_message`` event names them,
and the platform update is confirmed only after that.

What a SIGKILL leaves (the update is not confirmed until the message is recorded):

| killed | on redelivery |
|---|---|
| during the download | downloaded again (nothing was kept) |
| after ``keep``, before the index line | downloaded again; ``keep`` writes nothing new |
| after the index line, before the record | no download: the index and the blob say it is held |
| after the record, before the confirmation | no download; the message is a duplicate |

A document's copy is made (again) whenever it is missing, so a kill before it costs nothing.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from duragent.agents.chat_files import chat_file, chat_files_dir
from duragent.core.attachments import Attachment, AttachmentKind
from duragent.frontkit.inbound import InboundMessage, MediaRef
from duragent.frontkit.media import (
    Fetched,
    MediaSettings,
    MediaSource,
    MediaTooLargeError,
    MediaUnavailableError,
    byte_size,
    media_mime,
    noun,
)
from duragent.frontkit.media_index import MediaIndex
from duragent.frontkit.outbound import OutboundPort
from duragent.turns import TurnRunner

__all__ = ["NO_TRANSCRIBER", "MediaIntake", "Taken"]

log = logging.getLogger(__name__)

NO_TRANSCRIBER = (
    "I kept your voice note, but I cannot listen to it: voice transcription is not set up. "
    "The bot's operator can turn it on under media.transcription in duragent.yaml "
    "(provider: openai with base_url, model and api_key_env, for any OpenAI-compatible "
    "speech-to-text service; or provider: local with model, for faster-whisper)."
)
"""Told once per chat when a voice note or audio arrives and nothing can transcribe it."""
_HEARD = (AttachmentKind.VOICE, AttachmentKind.AUDIO)


@dataclass(frozen=True, slots=True)
class Taken:
    """What a message's files became: the text to record, and the attachments it names."""

    text: str
    attachments: tuple[Attachment, ...]


@dataclass(frozen=True, slots=True)
class _NotKept:
    """A file not kept: the line the model reads about it."""

    line: str


class MediaIntake:
    """Takes a message's files into its session (see the module docstring)."""

    def __init__(
        self,
        turns: TurnRunner,
        outbound: OutboundPort,
        source: MediaSource,
        settings: MediaSettings | None = None,
    ) -> None:
        self._turns = turns
        self._outbound = outbound
        self._source = source
        self.settings = settings or MediaSettings()
        self.index = MediaIndex(turns.workspace_dir / "media")

    async def take(self, session_id: str, msg: InboundMessage, agent_dir: Path) -> Taken | None:
        """Keep ``msg``'s files in ``session_id``; None when nothing is left to record.

        Raises what keeping raised (``OSError``: the store refused the write): the message
        is not recorded and the update not confirmed, so the platform delivers it again.
        """
        kept: list[Attachment] = []
        refused: list[str] = []
        for ref in msg.media:
            outcome = await self._one(session_id, msg, ref)
            if isinstance(outcome, _NotKept):
                refused.append(outcome.line)
            else:
                kept.append(outcome)
        caption = msg.text.strip() if msg.text and msg.text.strip() else None
        if not kept and caption is None:
            return None
        lines = [a.transcript for a in kept if a.transcript]
        if caption is not None:
            lines.append(caption)
        lines.extend(refused)
        for attachment in kept:
            if attachment.kind is AttachmentKind.DOCUMENT:
                await self._save_for_tools(session_id, attachment, agent_dir)
        return Taken("\n".join(lines), tuple(kept))

    async def _one(
        self, session_id: str, msg: InboundMessage, ref: MediaRef
    ) -> Attachment | _NotKept:
        limit = self.settings.limits.of(ref.kind)
        if ref.size is not None and ref.size > limit:
            return await self._too_large(msg, ref, ref.size, limit)
        known = await self.index.get(session_id, ref.key)
        if known is not None and await self._turns.attachments.has(session_id, known.sha256):
            log.info("%s: %s %s is held already; not downloaded again", msg.chat.target,
                     noun(ref.kind), ref.key)  # fmt: skip
            return known
        try:
            fetched = await self._download(msg, ref, limit)
        except MediaTooLargeError as exc:  # found while downloading, or the platform's limit
            return await self._too_large(msg, ref, exc.size, exc.limit or limit)
        except MediaUnavailableError as exc:
            log.warning("%s: %s %s could not be downloaded: %s", msg.chat.target,
                        noun(ref.kind), ref.key, exc)  # fmt: skip
            what = noun(ref.kind)
            await self._tell(msg, f"Sorry, I could not download that {what} ({exc}).")
            return _NotKept(f"[{what} not received: it could not be downloaded]")
        data = fetched.data
        if len(data) > limit:  # a source that did not stop at the limit
            return await self._too_large(msg, ref, len(data), limit)
        mime = media_mime(ref.kind, ref.mime, fetched.mime, name=ref.name)
        transcript = await self._transcript(msg, ref, data, mime)

        def described(kept: Attachment) -> Attachment:
            """In the worker thread that kept the bytes: an image's header, the index line."""
            if ref.kind is AttachmentKind.IMAGE:  # the bytes say what they are better than names
                width, height, seen = _image_header(data)
                seen_mime = media_mime(ref.kind, seen, ref.mime, fetched.mime, name=ref.name)
                kept = replace(kept, mime=seen_mime, width=width, height=height)
            self.index.write(session_id, ref.key, kept)
            return kept

        attachment = await self._turns.attachments.keep(
            session_id,
            data,
            kind=ref.kind,
            mime=mime,
            name=ref.name,
            platform_id=ref.platform_id,
            transcript=transcript,
            then=described,
        )
        self.index.remember(session_id, ref.key, attachment)
        return attachment

    async def _download(self, msg: InboundMessage, ref: MediaRef, limit: int) -> Fetched:
        pauses: Sequence[float] = self.settings.retry_pauses
        for attempt, pause in enumerate([*pauses, None], start=1):
            try:
                return await self._source.fetch(ref, limit)
            except MediaUnavailableError as exc:
                if not exc.transient or pause is None:
                    raise
                log.info(
                    "%s: downloading %s %s failed (%s); attempt %d in %.1f s",
                    *(msg.chat.target, noun(ref.kind), ref.key, exc, attempt + 1, pause),
                )
                await asyncio.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _transcript(
        self, msg: InboundMessage, ref: MediaRef, data: bytes, mime: str
    ) -> str | None:
        if ref.kind not in _HEARD:
            return None
        transcriber = self.settings.transcriber
        if transcriber is None:
            if await self.index.tell_once(msg.chat.target):
                await self._tell(msg, NO_TRANSCRIBER)
            return None
        try:
            text = await transcriber.transcribe(data, filename=ref.name or "voice", mime=mime)
        except Exception as exc:  # LLMError, or a transcriber's bug: kept untranscribed
            log.warning("%s: %s %s was not transcribed: %s", msg.chat.target,
                        noun(ref.kind), ref.key, exc)  # fmt: skip
            return None
        return text.strip() or None

    async def _too_large(
        self, msg: InboundMessage, ref: MediaRef, size: int | None, limit: int
    ) -> _NotKept:
        what, many = noun(ref.kind), noun(ref.kind, plural=True)
        sized = f"is {byte_size(size)}, " if size is not None else "is "
        await self._tell(
            msg,
            f"That {what} {sized}over the {byte_size(limit)} limit for {many}, "
            "so I did not keep it.",
        )
        name = f" {ref.name}" if ref.name else ""
        of = f" of {byte_size(size)}" if size is not None else ""
        return _NotKept(f"[{what}{name}{of} not kept: over the {byte_size(limit)} limit]")

    async def _tell(self, msg: InboundMessage, text: str) -> None:
        try:
            await self._outbound.send_text(msg.chat, text, reply_to=msg.message_id)
        except Exception as exc:  # a courtesy: the message is taken in either way
            log.warning("could not tell %s: %r: %s", msg.chat.target, text[:40], exc)

    async def _save_for_tools(
        self, session_id: str, attachment: Attachment, agent_dir: Path
    ) -> None:
        """Copy a document where the agent's tools read it (atomically; once)."""
        dest = chat_files_dir(agent_dir, session_id) / chat_file(attachment)
        if await asyncio.to_thread(dest.is_file):
            return
        await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
        await self._turns.attachments.export(session_id, attachment.sha256, dest)


def _image_header(data: bytes) -> tuple[int | None, int | None, str | None]:
    """An image's width, height and type from its header (Nones: not one Pillow reads)."""
    from PIL import Image  # a main dependency; loaded with the first photo

    from duragent.llm.images import FORMATS

    try:
        with Image.open(io.BytesIO(data), formats=FORMATS) as image:
            width, height = image.size
            mime = image.get_format_mimetype()
    except Exception:  # not an image, or one Pillow refuses: kept without its pixels
        return None, None, None
    return int(width), int(height), mime
