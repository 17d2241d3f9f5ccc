"""A long reply's pieces are the messages ``send_text`` sends, and each goes out as itself.

``Delivery`` sends a long reply message by message (``DiscordOutbound.pieces``), recording
each, so a crash re-sends only the one in flight. That holds only if the pieces are exactly
the messages the whole reply is sent as, and a piece sent alone is that one message again.
Checked on the fake Discord through a real discord.py client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from duragent.frontkit import ChatRef
from duragent.gateways.discord.outbound import DiscordOutbound
from duragent.gateways.discord.split import DISCORD_TEXT_LIMIT, split_message, text_units
from duragent.testing import FakeDiscord
from tests.testing.discord_client import Listening, connected_client

CHANNEL = 200
CHAT = ChatRef("discord", str(CHANNEL))

LONG = (
    "**Report** of the week, with `code` and @everyone kept as text.\n\n"
    + "\n\n".join(f"Paragraph {i}: " + "word " * 120 for i in range(6))
    + "\n\n```python\n"
    + "\n".join(f"print({i})  # a line of code" for i in range(120))
    + "\n```\n\nThat is *all* 🎉."
)
"""Several messages on Discord: prose cut at paragraphs, then a code block cut in two."""

TEXTS = [
    LONG,
    "one " * 1500,
    "x" * 4500,
    "```\n" + "a line\n" * 700,  # an unclosed fence
    "🎉" * 1500,
    "intro\n\n~~~sh\n" + "echo hi\n" * 400 + "~~~\n",
]


@pytest.fixture
async def listening() -> AsyncIterator[Listening]:
    async with FakeDiscord() as dc:
        await dc.add_channel(CHANNEL)
        async with connected_client(dc) as connected:
            yield connected


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_each_piece_of_a_long_text_is_one_message_as_written(text: str) -> None:
    pieces = split_message(text)
    assert len(pieces) > 1
    for piece in pieces:
        assert text_units(piece) <= DISCORD_TEXT_LIMIT
        assert split_message(piece) == [piece]  # ``send_text`` sends it as it is


async def test_the_pieces_of_a_long_reply_are_exactly_the_messages_send_text_sends(
    listening: Listening,
) -> None:
    dc, outbound = listening.dc, DiscordOutbound(listening.client)
    asked = await dc.push_message(CHANNEL, "the report?", dc.owner)
    pieces = outbound.pieces(LONG)
    await outbound.send_text(CHAT, LONG, reply_to=str(asked["id"]))
    whole = dc.sent(CHANNEL)
    for number, piece in enumerate(pieces):
        await outbound.send_text(CHAT, piece, reply_to=str(asked["id"]) if number == 0 else None)
    apart = dc.sent(CHANNEL)[len(whole) :]
    assert len(pieces) >= 3
    assert [message["content"] for message in whole] == list(pieces)
    assert [message["content"] for message in apart] == list(pieces)
    quoting = [True] + [False] * (len(pieces) - 1)  # the first message alone replies
    assert [bool(message.get("message_reference")) for message in whole] == quoting
    assert [bool(message.get("message_reference")) for message in apart] == quoting
    assert outbound.pieces(LONG) == pieces  # the same text, the same pieces


async def test_a_piece_finishing_a_preview_is_edited_into_it_alone(listening: Listening) -> None:
    dc, outbound = listening.dc, DiscordOutbound(listening.client)
    first = outbound.pieces(LONG)[0]
    preview = await outbound.send_preview(CHAT, "**Report** of the")
    sent = await outbound.finish_preview(preview, first)
    edits = dc.edits(CHANNEL, int(preview.message_id))
    assert sent == preview
    assert edits[-1]["content"] == first
    assert len(dc.sent(CHANNEL)) == 1  # the preview itself: nothing follows the first piece
