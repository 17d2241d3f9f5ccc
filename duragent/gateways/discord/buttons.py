"""Approval buttons that still work after a restart: discord.py's persistent dynamic items.

A button's ``custom_id`` is the kit's payload (``approve:<decision>:<tag>``, see
``frontkit.approvals``): stable, and everything a press needs is in it or in the session's
durable pending approval. The client registers ``ApprovalButton`` once at start
(``Client.add_dynamic_items``), so discord.py routes a press on any approval message to it,
whether this process or an earlier one sent that message, with no per-message state kept in
memory (a view made only of dynamic items is not stored per message) and no timeout.

Who may decide is the kit's rule (the requester, from the durable pending approval); the
button hands every press over and the kit answers each one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import discord

from duragent.frontkit import Button

__all__ = ["ApprovalButton", "PressReceiver", "approval_view"]

TEMPLATE = r"approve:.+"
"""Every payload the kit writes (and the reference's untagged form); the kit reads the rest."""

_STYLES = (discord.ButtonStyle.success, discord.ButtonStyle.primary, discord.ButtonStyle.danger)


class PressReceiver(Protocol):
    """What a press is handed to: the client, which knows the gateway."""

    async def take_press(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """Hand a press on an approval button to the kit."""
        ...


class ApprovalButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    """One approval button (Allow Once, Allow Always or Deny), recognised by its ``custom_id``."""

    def __init__(self, button: discord.ui.Button[Any]) -> None:
        super().__init__(button)

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: Any,
        /,
    ) -> ApprovalButton:
        """The button a press arrived on (rebuilt from the message's component)."""
        assert isinstance(item, discord.ui.Button)
        return cls(item)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        """Hand the press to the kit through the client."""
        receiver: PressReceiver = interaction.client
        await receiver.take_press(interaction, self.custom_id)


def approval_view(buttons: Sequence[Button]) -> discord.ui.View:
    """The kit's buttons as one row of Discord buttons (green, blue, red), never timing out."""
    view = discord.ui.View(timeout=None)
    for button, style in zip(buttons, _STYLES, strict=False):
        view.add_item(
            ApprovalButton(
                discord.ui.Button(label=button.label, style=style, custom_id=button.data)
            )
        )
    return view
