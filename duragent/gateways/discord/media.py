"""Discord's attachments downloaded: the kit's ``MediaSource`` over discord.py's HTTP client.

An attachment's bytes are at its ``url`` on Discord's CDN, a signed link (``ex``/``is``/``hm``
in its query) that expires after a day: fetched with the client's own session, exactly as
``discord.Attachment.read()`` does (``HTTPClient.get_from_cdn``), so a proxy configured for
discord.py applies. The link travels in the ``MediaRef`` (plain data), not the ``Attachment``
object. A 404 (deleted, expired) or 403 is final; any other failure may pass.
"""

from __future__ import annotations

import aiohttp
import discord

from duragent.frontkit import Fetched, MediaRef, MediaTooLargeError, MediaUnavailableError

__all__ = ["DiscordMedia"]


class DiscordMedia:
    """Attachments fetched from Discord's CDN (the kit's ``MediaSource``)."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def fetch(self, ref: MediaRef, max_bytes: int) -> Fetched:
        """The attachment's bytes (errors as the kit's: ``frontkit.media``)."""
        if ref.url is None:
            raise MediaUnavailableError("the attachment has no link")
        try:
            data = await self._client.http.get_from_cdn(ref.url)
        except (discord.NotFound, discord.Forbidden) as exc:
            raise MediaUnavailableError(f"Discord answered {exc.status}") from exc
        except discord.HTTPException as exc:
            raise MediaUnavailableError(f"Discord answered {exc.status}", transient=True) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise MediaUnavailableError(f"the download failed: {exc}", transient=True) from exc
        if len(data) > max_bytes:
            raise MediaTooLargeError("over the limit", size=len(data))
        return Fetched(data, ref.mime)
