"""A fake Discord (gateway websocket + REST subset) over real sockets, for discord.py.

The Discord gateway's tests run the real ``discord.Client`` against this server instead of
discord.com (``gateways.discord.base_url``): login, the websocket handshake, event parsing,
the view store's button routing, REST sends, discord.py's rate-limit handling; no network, no
real bot::

    async with FakeDiscord(token=TOKEN) as dc:
        dc.add_channel(200)                              # a guild text channel
        ...                                              # start the gateway at dc.url
        await dc.push_message(200, "hi", ANN)            # what a user does
        assert dc.sent(200)[-1]["content"] == "Hello!"   # what the bot did

Gateway (``/gateway``, JSON text frames; ``discord_gateway``): HELLO; IDENTIFY → READY and
one GUILD_CREATE, or closed with 4004 for a wrong token and 4014 when the Message Content
intent is asked for and the application is not granted it (``message_content_allowed=False``),
as Discord does; heartbeats; RESUME; MESSAGE_CREATE (users', and the bot's own as Discord
echoes them), INTERACTION_CREATE, CHANNEL_CREATE / THREAD_CREATE.

REST (``/api/v10``, ``Authorization: Bot <token>``, 401 otherwise): ``GET /users/@me``,
``GET /oauth2/applications/@me``, ``GET /gateway`` and ``/gateway/bot``, ``GET
/channels/{id}``, ``POST /channels/{id}/messages``, ``PATCH /channels/{id}/messages/{id}``,
``POST /channels/{id}/typing``, ``POST /interactions/{id}/{token}/callback`` (a second answer
to one interaction is refused with 40060). Anything else is a 404, recorded. ``rate_limit``
scripts 429 answers with ``retry_after``, which discord.py must wait out itself; ``refuse``
scripts 403 Missing Access (a channel the bot lost access to); ``fail`` a 5xx and ``drop`` a
connection closed before or after the call took effect (``_discord_faults``). A message post
with ``enforce_nonce`` whose nonce the channel saw in the last minutes returns that message
and creates none, as Discord does.

Files the bot sends (``_discord_outbound``; discord.py's multipart ``payload_json`` and
``files[n]``, on a send or an edit) are served by the fake's CDN and recorded:
``sent_files(channel_id)``. Edits (``edits(channel_id, message_id)``: bodies, in order) change
the kept message (``message(id)``, ``final_texts``) and are echoed as MESSAGE_UPDATE; a DELETE
removes it (``deleted``). ``rate_limit``'s 429 carries Discord's headers too::

    await channel.send("chart", file=discord.File(io.BytesIO(png_bytes), "chart.png"))
    (sent,) = dc.sent_files(200)
    assert (sent.filename, sent.data) == ("chart.png", png_bytes)

Attachments users send (``_discord_files``): ``attachment(data, filename)`` keeps the bytes and
returns the attachment object to pass in ``push_message(attachments=[...])``; its signed ``url`` and
``proxy_url`` are served by this fake, so discord.py's ``Attachment.read()`` works, and
``attachment_downloads(id)`` counts the downloads::

    photo = dc.attachment(png_bytes, "cat.png")         # image: width/height read from it
    await dc.push_message(200, "look", ANN, attachments=[photo])
    assert dc.attachment_downloads(int(photo["id"])) == 1

Each call is stamped with an index and ``time.monotonic()`` (the same clock in every process
of one machine), so a benchmark or a restart campaign can read calls incrementally
(``calls(since=...)``) and trace a reply to the process that sent it. Run in a process of its
own (``python -m duragent.testing.fake_discord``), the fake is driven over HTTP through the
``/_fake`` endpoints (``_discord_control``). Several serve processes can share it: node ``b``
given ``base_url`` ``<url>/n/b`` is served REST and gateway under ``/n/b`` as without it, and
its calls and connections carry ``node`` ``b`` (``_fake_nodes``; ``a`` without a prefix).
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from duragent.testing._aiohttp_server import EmbeddedAiohttpServer
from duragent.testing._discord_faults import DiscordFault, DiscordFaults, Nonces, server_error_body
from duragent.testing._discord_files import DiscordCdn
from duragent.testing._discord_outbound import (
    BotUploads,
    RestBody,
    SentAttachment,
    UploadedPart,
    rate_limit_headers,
    read_body,
)
from duragent.testing._fake_nodes import DEFAULT_NODE, NODE_PREFIX, node_of, node_prefix
from duragent.testing.discord_gateway import GatewaySessions
from duragent.testing.discord_objects import (
    DM_CHANNEL,
    GUILD_TEXT,
    PUBLIC_THREAD,
    Person,
    application_object,
    channel_object,
    guild_object,
    interaction_object,
    message_object,
    snowflakes,
    user_object,
)

__all__ = ["DEFAULT_DISCORD_TOKEN", "DiscordCall", "FakeDiscord", "Person"]

DEFAULT_DISCORD_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAw.GfAkEd.fake-discord-token-for-tests-only_0"
DEFAULT_GUILD = 900
MESSAGE_CONTENT = 1 << 15
IS_VOICE_MESSAGE = 1 << 13
"""A message's flag when its one attachment is a voice message."""


@dataclass(frozen=True, slots=True)
class DiscordCall:
    """One REST request the bot made, and the answer it got."""

    method: str
    path: str
    """Under ``/api/v10`` (``/channels/200/messages``)."""
    body: dict[str, Any]
    status: int
    answer: Any
    """As answered then (a message edited later is not changed here)."""
    index: int = 0
    """Its place among every call this fake received (0 first; kept when old calls are not)."""
    time: float = 0.0
    """``time.monotonic()`` when the request arrived."""
    repeated: bool = False
    """A post Discord answered with an earlier message of the same nonce: nothing created."""
    fault: str | None = None
    """The scripted fault it met (``server_error``, ``drop``, ``drop_after``), if any."""
    node: str = DEFAULT_NODE
    """The serve process that made it: its ``/n/{node}`` prefix, ``a`` without one."""

    def to_json(self, *, answer: bool = True) -> dict[str, Any]:
        """The call as JSON (``GET /_fake/calls``), with Discord's answer or without."""
        found = {
            "index": self.index,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "body": self.body,
            "status": self.status,
            "repeated": self.repeated,
            "fault": self.fault,
            "node": self.node,
        }
        if answer:
            found["answer"] = self.answer
        return found


class FakeDiscord(EmbeddedAiohttpServer):
    """An in-process fake of Discord for discord.py (see the module docstring)."""

    name = "fake Discord"

    def __init__(
        self,
        token: str = DEFAULT_DISCORD_TOKEN,
        *,
        bot_username: str = "duragent_bot",
        bot_id: int = 4242,
        message_content_allowed: bool = True,
        guild_id: int = DEFAULT_GUILD,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_calls: int | None = None,
    ) -> None:
        """A fake Discord serving one bot (``token``).

        ``keep_calls``: how many of the latest calls ``calls()`` keeps (None: all); a
        benchmark's fake in a process of its own bounds its memory with it.
        """
        super().__init__(host, port)
        self.token = token
        self.bot = Person(bot_id, bot_username, global_name="Duragent", bot=True)
        self.owner = Person(1, "owner")
        self.guild_id = guild_id
        self.message_content_allowed = message_content_allowed
        self._ids = snowflakes()
        self._channels: dict[int, dict[str, Any]] = {}
        self._messages: dict[int, dict[str, Any]] = {}
        self._first_components: dict[int, list[dict[str, Any]]] = {}
        self._interactions: dict[int, dict[str, Any]] = {}
        self._answered: set[int] = set()
        self._calls: list[DiscordCall] = []
        self._call_count = 0
        self._keep_calls = keep_calls
        self._limits: dict[str, list[float]] = {}
        self._refusals: dict[str, int] = {}
        self._faults = DiscordFaults()
        self.slowed = 0
        self.answered_elsewhere = 0
        """The next presses this many are answered already when the bot answers them (40060),
        as when another node's copy of the press answered first."""
        """Requests that met a ``slow`` fault (counted as they arrive)."""
        self._nonces = Nonces()
        self.cdn = DiscordCdn()
        """The attachments' bytes and download counts (``fail_next`` scripts failures)."""
        self.uploads = BotUploads(self.cdn)
        """The bot's files (``upload_limit``: bytes one message may carry)."""
        self.gateway = GatewaySessions(lambda: self.token, self._refusal, self._greeting)
        """The websocket side: ``identified``, ``resumed``, ``connected``."""

    # -- the server ---------------------------------------------------------------------------

    def app(self) -> web.Application:
        """The gateway websocket, the REST routes and the ``/_fake`` control endpoints."""
        from duragent.testing._discord_control import control_routes

        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("", NODE_PREFIX):  # unprefixed: node "a"
            app.router.add_get(prefix + "/gateway", self.gateway.serve)
            app.router.add_route("*", prefix + "/api/v10/{tail:.*}", self._rest)
        app.router.add_routes(self.cdn.routes())
        app.router.add_routes(control_routes(self))
        app.on_shutdown.append(self._close_sessions)
        return app

    async def _close_sessions(self, _app: web.Application) -> None:
        await self.gateway.close_all()

    # -- what users and admins do -------------------------------------------------------------

    async def add_channel(self, channel_id: int, *, thread_of: int | None = None) -> None:
        """A guild text channel (or a thread of one) the bot can see."""
        kind = PUBLIC_THREAD if thread_of is not None else GUILD_TEXT
        channel = channel_object(channel_id, kind, guild_id=self.guild_id, parent_id=thread_of)
        self._channels[channel_id] = channel
        await self.gateway.dispatch("THREAD_CREATE" if thread_of else "CHANNEL_CREATE", channel)

    async def push_message(
        self,
        channel_id: int,
        content: str,
        author: Person,
        *,
        mentions: Sequence[Person] = (),
        reply_to: int | None = None,
        attachments: Sequence[dict[str, Any]] = (),
        stickers: Sequence[dict[str, Any]] = (),
        message_id: int | None = None,
    ) -> dict[str, Any]:
        """A user writes (a DM when the channel is not a guild's); the MESSAGE_CREATE sent.

        ``message_id`` of a message pushed before sends the same event again (a redelivery).
        """
        if message_id is not None and message_id in self._messages:
            message = self._messages[message_id]
        else:
            channel = self._channels.setdefault(channel_id, channel_object(channel_id, DM_CHANNEL))
            guild = self.guild_id if channel["type"] != DM_CHANNEL else None
            reference = self._messages.get(reply_to) if reply_to is not None else None
            if reply_to is not None and reference is None:
                raise ValueError(f"no message {reply_to} to reply to")
            message = message_object(
                message_id or next(self._ids),
                channel_id,
                author,
                content,
                guild_id=guild,
                mentions=mentions,
                reference=reference,
                attachments=attachments,
                stickers=stickers,
            )
            if any("waveform" in a for a in attachments):
                message["flags"] |= IS_VOICE_MESSAGE
            self._messages[int(message["id"])] = message
        await self.gateway.dispatch("MESSAGE_CREATE", message)
        return message

    def attachment(self, data: bytes, filename: str, **options: Any) -> dict[str, Any]:
        """A file a user attaches (served at its ``url``): the object for ``push_message``.

        Options (``DiscordCdn.attachment``): ``content_type``, ``width``, ``height``,
        ``description``, ``voice_seconds`` (a voice message). Call it while the fake serves.
        """
        if self._loop is None:
            raise RuntimeError("start the fake Discord before making attachments")
        return self.cdn.attachment(self.url, next(self._ids), data, filename, **options)

    def attachment_downloads(self, attachment_id: int | str | None = None) -> int:
        """Times the bot downloaded an attachment (without an id: every attachment)."""
        return self.cdn.downloads(None if attachment_id is None else int(attachment_id))

    async def press(
        self, message_id: int, custom_id: str, presser: Person, *, as_first_sent: bool = False
    ) -> dict[str, Any]:
        """A user presses a button of a message; the INTERACTION_CREATE sent.

        ``as_first_sent``: the message as the bot first sent it, buttons included, though it
        was edited since (a second tap on a screen not yet refreshed).
        """
        message = dict(self._messages[message_id])
        if as_first_sent:
            message["components"] = self._first_components.get(message_id, [])
        interaction_id = next(self._ids)
        interaction = interaction_object(
            interaction_id,
            f"token-{interaction_id}",
            self.bot.id,
            presser,
            message,
            custom_id,
            self._channels[int(message["channel_id"])],
        )
        self._interactions[interaction_id] = interaction
        if self.answered_elsewhere:  # another node's copy of the press answered it first
            self.answered_elsewhere -= 1
            self._answered.add(interaction_id)
        await self.gateway.dispatch("INTERACTION_CREATE", interaction)
        return interaction

    def plant_message(self, channel_id: int, content: str, custom_ids: Sequence[str]) -> int:
        """A message of the bot's (with buttons, if any), as sent in an earlier life; its id."""
        buttons = [{"type": 2, "style": 1, "label": c, "custom_id": c} for c in custom_ids]
        components = [{"type": 1, "components": buttons}] if buttons else []
        self._channels.setdefault(channel_id, channel_object(channel_id, DM_CHANNEL))
        guild = self.guild_id if self._channels[channel_id]["type"] != DM_CHANNEL else None
        message = message_object(
            next(self._ids), channel_id, self.bot, content, guild_id=guild, components=components
        )
        self._messages[int(message["id"])] = message
        self._first_components[int(message["id"])] = components
        return int(message["id"])

    def connected_nodes(self) -> list[str]:
        """The node of each open gateway connection (``["a", "b"]``: both nodes hold one)."""
        return self.gateway.connected_nodes()

    async def disconnect(self, code: int = 4000) -> None:
        """Drop every websocket (discord.py reconnects)."""
        await self.gateway.close_all(code)

    def refuse(self, method: str, path: str, times: int = 1) -> None:
        """The next ``times`` requests to ``method path`` get 403 Missing Access."""
        key = f"{method} {path}"
        self._refusals[key] = self._refusals.get(key, 0) + times

    def rate_limit(self, method: str, path: str, *retry_after: float) -> None:
        """The next requests to ``method path`` are answered 429 with these ``retry_after``."""
        self._limits.setdefault(f"{method} {path}", []).extend(retry_after)

    def fail(self, method: str, path: str, status: int = 502, times: int = 1) -> None:
        """The next ``times`` requests to ``method path`` get ``status`` (5xx), not applied."""
        self._faults.add(method, path, DiscordFault("server_error", status), times)

    def drop(self, method: str, path: str, *, after_applying: bool = False, times: int = 1) -> None:
        """The next ``times`` requests to ``method path`` lose their connection unanswered.

        Before the call takes effect, or (``after_applying``) after it.
        """
        fault = DiscordFault("drop_after") if after_applying else DiscordFault("drop")
        self._faults.add(method, path, fault, times)

    def slow(self, method: str, path: str, seconds: float, *, times: int = 1) -> None:
        """The next ``times`` requests to ``method path`` are answered ``seconds`` late.

        Each is applied then; ``slowed`` counts those that arrived.
        """
        self._faults.add(method, path, DiscordFault("slow", seconds=seconds), times)

    # -- what the bot did ---------------------------------------------------------------------

    def calls(
        self, method: str | None = None, path: str | None = None, *, since: int = 0
    ) -> list[DiscordCall]:
        """REST requests, in order (filtered by method, exact path, and index ``since`` on)."""
        start = 0
        if since and self._calls:  # indexes are consecutive: skip straight to ``since``
            start = max(0, min(len(self._calls), since - self._calls[0].index))
        return [
            c
            for c in self._calls[start:]
            if (method is None or c.method == method) and (path is None or c.path == path)
        ]

    def sent(self, channel_id: int) -> list[dict[str, Any]]:
        """Messages the bot created in a channel, as first sent (answers of the accepted)."""
        path = f"/channels/{channel_id}/messages"
        return [c.answer for c in self.calls("POST", path) if c.status == 200 and not c.repeated]

    def message(self, message_id: int) -> dict[str, Any] | None:
        """A message as it is now (edits applied)."""
        return self._messages.get(message_id)

    def edits(self, channel_id: int, message_id: int | None = None) -> list[dict[str, Any]]:
        """The bot's accepted edits in a channel (of one message): request bodies, in order."""
        prefix = f"/channels/{channel_id}/messages/"
        return [
            c.body
            for c in self.calls("PATCH")
            if c.status == 200
            and c.path.startswith(prefix)
            and message_id in (None, int(c.path.removeprefix(prefix)))
        ]

    def sent_files(self, channel_id: int | None = None) -> list[SentAttachment]:
        """Files the bot attached to messages (in one channel), sends and edits, in order."""
        return self.uploads.of(lambda s: channel_id is None or s.channel_id == channel_id)

    def deleted(self, channel_id: int) -> list[int]:
        """Ids of the messages the bot deleted in a channel, in order."""
        prefix = f"/channels/{channel_id}/messages/"
        return [
            int(c.path.removeprefix(prefix))
            for c in self.calls("DELETE")
            if c.path.startswith(prefix) and c.status == 204
        ]

    def final_texts(self, channel_id: int) -> list[str]:
        """The bot's messages in a channel as they read now (edits applied, deleted gone)."""
        return [
            m["content"]
            for m in self._messages.values()
            if m["channel_id"] == str(channel_id) and m["author"]["id"] == str(self.bot.id)
        ]

    def interaction_answers(self) -> list[dict[str, Any]]:
        """Accepted answers to presses (callback bodies: ``type`` 4 with text, 6 silent)."""
        return [
            c.body
            for c in self.calls("POST")
            if c.path.startswith("/interactions/") and c.status == 200
        ]

    # -- gateway ------------------------------------------------------------------------------

    def _refusal(self, identify: dict[str, Any]) -> tuple[int, str] | None:
        if identify.get("token") != self.token:
            return 4004, "Authentication failed."
        if int(identify.get("intents", 0)) & MESSAGE_CONTENT and not self.message_content_allowed:
            return 4014, "Disallowed intent(s)."
        return None

    def _greeting(
        self, session_id: str, node: str
    ) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        ready = {
            "v": 10,
            "user": user_object(self.bot),
            "guilds": [{"id": str(self.guild_id), "unavailable": True}],
            "session_id": session_id,
            "resume_gateway_url": self._gateway_url(node),
            "application": {"id": str(self.bot.id), "flags": 0},
        }
        channels = [c for c in self._channels.values() if c["type"] != DM_CHANNEL]
        return ready, [("GUILD_CREATE", guild_object(self.guild_id, channels, self.bot))]

    def _gateway_url(self, node: str) -> str:
        """The websocket address handed to ``node``: under its prefix, so it stays its own."""
        return f"ws://{self.host}:{self.port}{node_prefix(node)}/gateway"

    # -- REST ---------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        path = "/" + request.match_info["tail"]
        read = await read_body(request)
        body = read.body if isinstance(read, RestBody) else {}
        answer: Any
        fault = self._faults.take(f"{request.method} {path}")
        if fault is not None and fault.kind == "slow":
            self.slowed += 1
            await asyncio.sleep(fault.seconds)
            fault = None
        posted_in = _message_post_channel(request.method, path)
        repeated = None
        if posted_in is not None:
            earlier = self._nonces.earlier(posted_in, body)
            repeated = None if earlier is None else self._messages.get(earlier)
        if fault is not None and fault.kind == "server_error":
            status, answer = fault.status, server_error_body(fault.status)
        elif fault is not None and fault.kind == "drop":
            status, answer = 0, None
        elif repeated is not None:
            status, answer = 200, copy.deepcopy(repeated)
        elif isinstance(read, RestBody):
            status, answer = self._answer(request, path, read.body, read.files)
            if status == 200 and posted_in is not None:
                self._nonces.remember(posted_in, body, int(answer["id"]))
        else:
            status, answer = read
        self._record(
            DiscordCall(
                request.method,
                path,
                body,
                status,
                copy.deepcopy(answer),
                self._call_count,
                arrived,
                repeated is not None,
                None if fault is None else fault.kind,
                node_of(request),
            )
        )
        message_call = path.startswith("/channels/") and "/messages" in path
        event = {"POST": "MESSAGE_CREATE", "PATCH": "MESSAGE_UPDATE"}.get(request.method)
        if message_call and event and status == 200 and repeated is None:
            await self.gateway.dispatch(event, answer)
        if fault is not None and fault.kind in ("drop", "drop_after"):
            if request.transport is not None:
                request.transport.abort()  # aiohttp lets the response below go quietly
            return web.Response(status=500)
        if status == 204:
            if message_call and request.method == "DELETE":
                channel_id, message_id = path.split("/")[2], path.rsplit("/", 1)[1]
                gone = {"id": message_id, "channel_id": channel_id}
                await self.gateway.dispatch("MESSAGE_DELETE", gone)
            return web.Response(status=204)
        headers = {"Content-Type": "application/json"}  # discord.py compares it exactly
        if status == 429:
            headers.update(rate_limit_headers(float(answer["retry_after"]), path))
        return web.Response(body=json.dumps(answer).encode(), status=status, headers=headers)

    def _record(self, call: DiscordCall) -> None:
        self._call_count += 1
        self._calls.append(call)
        keep = self._keep_calls
        if keep is not None and len(self._calls) > 2 * keep:  # trimmed in batches: cheap
            del self._calls[:-keep]

    def _answer(
        self, request: web.Request, path: str, body: dict[str, Any], files: list[UploadedPart]
    ) -> tuple[int, Any]:
        key = f"{request.method} {path}"
        if self._refusals.get(key):
            self._refusals[key] -= 1
            return 403, {"message": "Missing Access", "code": 50001}
        if self._limits.get(key):
            retry = self._limits[key].pop(0)
            return 429, {
                "message": "You are being rate limited.",
                "retry_after": retry,
                "global": False,
            }
        parts = path.strip("/").split("/")
        if parts[0] == "interactions" and len(parts) == 4:
            return self._interaction_callback(int(parts[1]), body)
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return 401, {"message": "401: Unauthorized", "code": 0}
        if key == "GET /users/@me":
            return 200, user_object(self.bot)
        if key == "GET /oauth2/applications/@me":
            return 200, application_object(self.bot, self.owner)
        if key in ("GET /gateway", "GET /gateway/bot"):
            url = self._gateway_url(node_of(request))
            limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
            return 200, {"url": url, "shards": 1, "session_start_limit": limit}
        if parts[0] == "channels" and len(parts) >= 2 and parts[1].isdigit():
            return self._channel_call(request.method, int(parts[1]), parts[2:], body, files)
        return 404, {"message": "404: Not Found", "code": 0}

    def _channel_call(
        self,
        method: str,
        channel_id: int,
        rest: list[str],
        body: dict[str, Any],
        files: list[UploadedPart],
    ) -> tuple[int, Any]:
        channel = self._channels.setdefault(channel_id, channel_object(channel_id, DM_CHANNEL))
        guild = self.guild_id if channel["type"] != DM_CHANNEL else None
        if method == "GET" and not rest:
            return 200, channel
        if method == "POST" and rest == ["typing"]:
            return 204, None
        if method == "POST" and rest == ["messages"]:
            content = str(body.get("content") or "")
            if len(content) > 2000 or not (content.strip() or files):
                return 400, {"message": "Invalid Form Body", "code": 50035}
            attachments = self.uploads.attachments(self.url, self._ids, body, files)
            if isinstance(attachments, tuple):
                return attachments
            ref = body.get("message_reference") or {}
            reference = self._messages.get(int(ref.get("message_id", 0) or 0))
            components = list(body.get("components") or [])
            message = message_object(
                next(self._ids),
                channel_id,
                self.bot,
                content,
                guild_id=guild,
                reference=reference,
                components=components,
                attachments=attachments,
            )
            if body.get("nonce") is not None:
                message["nonce"] = body["nonce"]
            if ref and reference is None:  # replying to a deleted message: still sent
                message["message_reference"] = {"message_id": str(ref["message_id"])}
            self._messages[int(message["id"])] = message
            self._first_components[int(message["id"])] = components
            self.uploads.record(message, [], "send")
            return 200, message
        if len(rest) == 2 and rest[0] == "messages" and rest[1].isdigit():
            found = self._messages.get(int(rest[1]))
            if found is None or found["channel_id"] != str(channel_id):
                return 404, {"message": "Unknown Message", "code": 10008}
            if method == "PATCH":
                return self.uploads.edit(found, body, files, self.url, self._ids)
            if method == "DELETE":
                del self._messages[int(rest[1])]
                return 204, None
        return 404, {"message": "404: Not Found", "code": 0}

    def _interaction_callback(self, interaction_id: int, body: dict[str, Any]) -> tuple[int, Any]:
        if interaction_id not in self._interactions:
            return 404, {"message": "Unknown interaction", "code": 10062}
        if interaction_id in self._answered:
            return 400, {"message": "Interaction has already been acknowledged.", "code": 40060}
        self._answered.add(interaction_id)
        ephemeral = bool((body.get("data") or {}).get("flags", 0) & 64)
        answer = {"interaction": {"id": str(interaction_id), "type": 3}}
        answer["interaction"]["response_message_ephemeral"] = ephemeral
        return 200, answer


if __name__ == "__main__":
    from duragent.testing._discord_cli import main

    sys.exit(main())


def _message_post_channel(method: str, path: str) -> int | None:
    """The channel of a ``POST /channels/{id}/messages`` (a message created), else None."""
    parts = path.strip("/").split("/")
    if method != "POST" or len(parts) != 3 or parts[0] != "channels" or parts[2] != "messages":
        return None
    return int(parts[1]) if parts[1].isdigit() else None
