"""What the month's people send besides text: which messages are media, and their bytes.

Shared by the Telegram DMs (``campaign.send_medium``) and the Discord DMs
(``discord_side``): a photo is a PNG of its own size and colour, a voice note's bytes carry
its words (the scripted transcriber hears them), a document is a ledger naming its message,
which the agent reads back with ``cat``.
"""

from __future__ import annotations

import io
import random

from bench.year.campaign import MEMORY_CHATS
from duragent.testing.campaign_verdict import CampaignMessage, Chat

__all__ = ["DOCUMENT_WORDS", "MEDIA", "ledger", "media_of", "png", "voice_bytes"]

DOCUMENT_WORDS = "the ledger of {token}"
"""What a document the crowd sends says (the model checks it came back through ``cat``)."""

MEDIA = {4: "photo", 6: "voice", 8: "document"}
"""DM message ordinal mod 9 → the medium it is sent as (a text message otherwise)."""


def media_of(chat: Chat, m: CampaignMessage) -> str | None:
    """The medium ``m`` is sent as, or None (text): only plain DM messages, and none in the
    chats whose messages the year gives a part (memory notes: ``MEMORY_CHATS``)."""
    if chat.group or m.tool or m.ordinal == 0 or chat.index % MEMORY_CHATS == 1:
        return None
    return MEDIA.get(m.ordinal % 9)


def voice_bytes(words: str) -> bytes:
    """A "voice note" whose bytes carry its words (the scripted transcriber reads them)."""
    return b"OggS\x00\x02" + words.encode() + b"\x00" * 512


def png(seed: str) -> bytes:
    """A PNG of a size and colour drawn from ``seed`` (a photo a person sends)."""
    from PIL import Image

    rng = random.Random(seed)
    size = (rng.choice((640, 1280, 1600)), rng.choice((480, 960, 1200)))
    colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def ledger(token: str) -> bytes:
    """A document naming ``token`` (``DOCUMENT_WORDS``), which the agent reads back."""
    return (DOCUMENT_WORDS.format(token=token) + "\n" + "figures\n" * 40).encode()
