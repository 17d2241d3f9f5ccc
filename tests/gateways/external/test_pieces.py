"""An external gateway's text is one piece: the gateway splits it, past what duragent sees.

The protocol names no message length, so ``ExternalOutbound.pieces`` cannot cut a text the
way the gateway will; it hands the whole text over as one ``send_message``, and ``Delivery``
records it as one part (sent again whole if a crash comes before the gateway confirms it).
"""

from __future__ import annotations

import asyncio

from duragent.frontkit import ChatRef
from duragent.gateways.external.outbound import ExternalOutbound
from duragent.gateways.external.protocol import Command, SendMessage

CHAT = ChatRef("ext", "c1")
LONG = "A long reply. " * 800


async def test_a_long_text_is_one_piece_sent_as_one_command_and_a_blank_one_none() -> None:
    written: list[Command] = []

    async def send(command: Command) -> None:
        written.append(command)

    running = asyncio.Event()
    running.set()
    outbound = ExternalOutbound("ext", send, running, asyncio.Event())
    outbound.confirms = False  # a gateway that answers no command: done once written
    [piece] = outbound.pieces(LONG)
    await outbound.send_text(CHAT, piece, reply_to="m1")
    assert piece == LONG
    assert [(c.content, c.reply_to) for c in written if isinstance(c, SendMessage)] == [
        (LONG, "m1")
    ]
    assert outbound.pieces(" \n ") == ()
