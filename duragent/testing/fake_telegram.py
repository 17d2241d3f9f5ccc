r"""A fake Telegram Bot API server over real HTTP, for python-telegram-bot's ``base_url``.

The Telegram gateway's tests, its restart campaign and its benchmark run the real
python-telegram-bot client against this server instead of api.telegram.org: the whole client
path (HTTP, long polling, JSON parsing, error mapping to ``BadRequest``/``RetryAfter``) is
exercised, without network or a real bot::

    async with FakeTelegram() as tg:                        # DEFAULT_TOKEN, a free port
        bot = telegram.Bot(tg.token, base_url=tg.base_url)   # base_url is f"{tg.url}/bot"
        tg.push_message(chat_id=42, text="hi")              # what a user does
        ...                                                 # the gateway answers
        assert tg.sent_messages(42) == ["Hello!"]           # what the user sees
        assert tg.calls("sendChatAction")                   # what the bot tried

Methods (``/bot<token>/<method>``, JSON, form or query parameters): getMe, getUpdates (long
polling: ``offset`` confirms, ``timeout`` waits, a newer poll ends an older one with 409),
sendMessage, sendChatAction, editMessageText, editMessageReplyMarkup, answerCallbackQuery,
set/delete/getWebhookInfo, set/get/deleteMyCommands, getFile, close, logOut, sendPhoto,
sendDocument, sendVoice, sendAudio, sendVideo, sendMessageDraft, deleteMessage. Any other method
is answered 404 "Not Found: method not found" and recorded; a wrong token 401 "Unauthorized".
Validation follows Telegram where a gateway can break it (``telegram_methods``,
``telegram_html``); faults are scripted with ``FaultRule`` (``telegram_faults``). Under a
``/n/<node>`` prefix (a cluster test's node ``b`` given ``base_url`` ``<url>/n/b``) the Bot API
and file routes answer the same, and calls, downloads and sent files record the node
(``_fake_nodes``; ``a`` without a prefix).

Files: ``push_photo``/``push_voice``/``push_audio``/``push_document``/``push_video`` (or
``push_media``) send the bytes a test supplies (``_telegram_media``); the bot downloads them
with ``getFile`` and ``GET /file/bot<token>/<file_path>`` (``base_file_url`` is
python-telegram-bot's ``base_file_url``), and ``downloads(file_id)`` counts the downloads
(``_telegram_files``: limits, errors, and faults under the method name ``downloadFile``)::

    update = tg.push_photo(42, jpeg_bytes, caption="look")
    bot = telegram.Bot(tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url)
    ...                                                 # the gateway downloads the photo
    assert tg.downloads(update["message"]["photo"][-1]["file_id"]) == 1

What the bot sends back and changes (``_telegram_outbound``): ``sent_files`` (the bytes, name,
type and caption of each photo, document, voice note, audio or video: uploaded, re-sent by
``file_id`` or fetched from a URL), ``edits`` and ``message_text``/``final_texts`` (a message
as it reads after its edits), ``drafts`` (``sendMessageDraft``), ``deleted``, and the command
menus by scope and language (``commands``, ``command_menus``). Faults match these methods by
name like any other (``FaultRule.too_many_requests(method="editMessageText")``)::

    await bot.send_photo(42, photo=png_bytes, caption="<b>chart</b>", parse_mode="HTML")
    (sent,) = tg.sent_files(42, "photo")
    assert (sent.data, sent.caption) == (png_bytes, "chart")

Three ways to run it:

- ``async with FakeTelegram(...)`` in the test's event loop;
- ``with FakeTelegram(...)`` on its own loop in a daemon thread (sync tests);
- in another process, for tests that SIGKILL the bot process (and by hand)::

      python -m duragent.testing.fake_telegram --port 8081
      curl -X POST localhost:8081/_fake/message -d '{"chat_id": 1, "text": "hi"}'
      curl localhost:8081/_fake/sent?chat_id=1
      curl -X POST localhost:8081/_fake/faults \\
           -d '{"kind": "retry_after", "retry_after": 3, "every": 2}'
      curl localhost:8081/_fake/calls?method=sendMessage

  Control endpoints (JSON in and out, outside ``/bot``): ``GET /_fake/info``;
  ``POST /_fake/message``, ``/_fake/edited_message``, ``/_fake/callback_query`` (keyword
  arguments of the ``push_*`` methods), ``/_fake/media`` (``push_media``'s, the bytes as
  ``data_base64``) and ``/_fake/update`` (``{"kind", "payload"}``);
  ``GET /_fake/downloads?file_id=&node=`` (download counts);
  ``GET /_fake/sent_files?chat_id=&kind=`` (bytes as ``data_base64``), ``/_fake/edits``,
  ``/_fake/drafts``, ``/_fake/deleted``, ``/_fake/final_texts``,
  ``/_fake/message_now?chat_id=&message_id=``, ``/_fake/commands``;
  ``GET /_fake/updates`` (unconfirmed); ``GET /_fake/calls?method=&since=&chat_id=&answers=0``
  (``answers=0``: the calls without the Bot API's answers, for a load generator's polls);
  ``GET /_fake/sent?chat_id=``; ``GET /_fake/send_times?chat_id=``;
  ``GET /_fake/early_retries``; ``GET|POST|DELETE /_fake/faults``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from duragent.testing import telegram_calls
from duragent.testing._aiohttp_server import EmbeddedAiohttpServer
from duragent.testing._fake_nodes import DEFAULT_NODE, NODE_PREFIX, node_of
from duragent.testing._telegram_files import MAX_FILE_SIZE, FileServer, FileStore
from duragent.testing._telegram_http import MAX_REQUEST_SIZE, read_params, respond
from duragent.testing._telegram_media import TelegramMediaPushes
from duragent.testing._telegram_outbound import TelegramOutboundRecords
from duragent.testing.telegram_calls import CallLog, EarlyRetry, RecordedCall
from duragent.testing.telegram_faults import FaultBook, FaultRule
from duragent.testing.telegram_methods import BotMethods, chat_id_of, error
from duragent.testing.telegram_objects import ChatType, TelegramUser, user_object
from duragent.testing.telegram_store import ChatStore, UpdateQueue
from duragent.testing.telegram_updates import (
    callback_query_update,
    edited_message_update,
    message_update,
    sender_for,
)

__all__ = ["DEFAULT_TOKEN", "FakeTelegram"]

log = logging.getLogger(__name__)

DEFAULT_TOKEN = "123456:TEST-fake-telegram-token-for-tests-only"
"""Shaped like @BotFather's (``<bot id>:<35 or so of [A-Za-z0-9_-]>``), so duragent's own
check (``TelegramConfig.token_problem``) takes it: the fake and the product agree by default."""
MAX_POLL_TIMEOUT = 50.0
"""Longest ``getUpdates`` wait honoured (Telegram's own cap is about 50 s)."""
_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)


class FakeTelegram(TelegramMediaPushes, TelegramOutboundRecords, EmbeddedAiohttpServer):
    """An in-process fake of the Telegram Bot API (see the module docstring).

    Args:
        token: the bot token the server accepts; any other gets 401.
        bot_username: the bot's ``@username`` (what group members mention).
        bot_name: the bot's first name.
        host: interface to bind; loopback by default.
        port: TCP port; 0 picks a free one (read ``port``/``url`` after starting).
        strict_chats: answer "chat not found" to sends into chats no update came from.
        first_update_id: the first ``update_id`` handed out.
        keep_calls: how many of the latest calls ``calls()`` keeps (None: all); per-chat send
            times are always kept in full.
        clock: the Unix time messages and edits are dated with (default: the wall clock;
            ``bench/year`` passes its simulated one).
        file_size_limit: the largest file ``getFile`` serves (Telegram's 20 MB for bots; a
            test of the limit lowers it rather than pushing 20 MB).
    """

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_username: str = "duragent_test_bot",
        bot_name: str = "Duragent Test Bot",
        host: str = "127.0.0.1",
        port: int = 0,
        strict_chats: bool = False,
        first_update_id: int = 1,
        keep_calls: int | None = None,
        clock: Callable[[], float] = time.time,
        file_size_limit: int = MAX_FILE_SIZE,
    ) -> None:
        super().__init__(host, port)
        self.token = token
        prefix = token.split(":", 1)[0]
        bot_id = int(prefix) if prefix.isdigit() else 1
        self.bot: dict[str, Any] = user_object(
            TelegramUser(id=bot_id, first_name=bot_name, username=bot_username, is_bot=True)
        )
        self.bot.update(
            can_join_groups=True, can_read_all_group_messages=False, supports_inline_queries=False
        )
        self._store = ChatStore(strict_chats=strict_chats, clock=clock)
        self._updates = UpdateQueue(first_update_id)
        self._methods = BotMethods(self.bot, self._store, self._updates)
        self._files = FileStore(file_size_limit)
        self._methods.table["getFile"] = self._files.get_file
        self._install_outbound(self._photo)
        self._log = CallLog(keep_calls)
        self._faults = FaultBook()
        self._lock = threading.Lock()
        self._arrived: asyncio.Event | None = None
        self._poll_generation = 0
        self._polls_waiting = 0

    # -- addresses ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """python-telegram-bot's ``base_url`` (it appends ``<token>/<method>``)."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """python-telegram-bot's ``base_file_url`` (it appends ``<token>/<file_path>``)."""
        return f"{self.url}/file/bot"

    @property
    def bot_username(self) -> str:
        """The bot's username, without ``@``."""
        return str(self.bot["username"])

    # -- what users do ------------------------------------------------------------------------

    def push_message(
        self,
        chat_id: int,
        text: str | None = None,
        *,
        chat_type: ChatType | None = None,
        chat_title: str | None = None,
        user_id: int | None = None,
        username: str | None = None,
        first_name: str | None = None,
        entities: list[dict[str, Any]] | None = None,
        reply_to_message_id: int | None = None,
        message_thread_id: int | None = None,
        caption: str | None = None,
        photo: bool = False,
        sticker: str | None = None,
        document: str | None = None,
    ) -> dict[str, Any]:
        """A user writes in a chat; returns the queued update (``update["message"]``).

        ``chat_type`` defaults to private for positive ids, supergroup for negative ones.
        Entities default to the ``@mentions`` and ``/commands`` found in the text (caption).
        ``sticker`` is the sticker's emoji, ``document`` a file name.
        """
        sender = sender_for(chat_id, user_id, username, first_name)
        with self._lock:
            update = message_update(
                self._store,
                self._updates,
                chat_id,
                text,
                sender=sender,
                chat_type=chat_type,
                chat_title=chat_title,
                entities=entities,
                reply_to_message_id=reply_to_message_id,
                message_thread_id=message_thread_id,
                caption=caption,
                photo=photo,
                sticker=sticker,
                document=document,
            )
        self._notify()
        return update

    def push_edited_message(self, chat_id: int, message_id: int, text: str) -> dict[str, Any]:
        """A user edits an earlier message; returns the ``edited_message`` update."""
        with self._lock:
            update = edited_message_update(self._store, self._updates, chat_id, message_id, text)
        self._notify()
        return update

    def push_callback_query(
        self,
        chat_id: int,
        message_id: int,
        data: str | None = None,
        *,
        button: str | None = None,
        user_id: int | None = None,
        username: str | None = None,
        first_name: str | None = None,
        stale: bool = False,
    ) -> dict[str, Any]:
        """A user presses a button (by ``data`` or label) on a bot message; returns the update.

        ``stale``: a press of a button the bot has since edited away (still on the user's
        screen: a double tap, a slow network), by ``data``.
        """
        if (data is None) == (button is None):
            raise ValueError("press a button by its data or by its label (button=...), not both")
        sender = sender_for(chat_id, user_id, username, first_name)
        with self._lock:
            update = callback_query_update(
                self._store,
                self._updates,
                chat_id,
                message_id,
                sender=sender,
                data=data,
                button=button,
                stale=stale,
            )
        self._notify()
        return update

    def push_update(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Queue any update as given (``{"update_id": n, kind: payload}``)."""
        with self._lock:
            update = self._updates.push(kind, payload)
        self._notify()
        return update

    @property
    def polls_waiting(self) -> int:
        """``getUpdates`` calls waiting for an update right now (the bot is listening)."""
        return self._polls_waiting

    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates the bot has not confirmed yet (delivered or not)."""
        with self._lock:
            return self._updates.pending()

    # -- what the bot did ---------------------------------------------------------------------

    def calls(
        self, method: str | None = None, *, since: int = 0, chat_id: int | str | None = None
    ) -> list[RecordedCall]:
        """Calls received, in order (optionally one method's, one chat's, from index ``since``)."""
        with self._lock:
            found = self._log.calls(method, since=since)
        if chat_id is None:
            return found
        return [c for c in found if str(c.chat_id) == str(chat_id)]

    def sent_messages(self, chat_id: int | str | None = None) -> list[str]:
        """Texts of the messages the bot delivered (to one chat), as the user sees them."""
        return telegram_calls.sent_texts(self.calls("sendMessage"), chat_id)

    def message(self, chat_id: int | str, message_id: int) -> dict[str, Any] | None:
        """A message as it is now (after edits), or ``None``."""
        with self._lock:
            found = self._store.message(chat_id, message_id)
            return dict(found) if found is not None else None

    def send_times(self, chat_id: int | str) -> list[float]:
        """``time.monotonic()`` of every message delivered to the chat."""
        with self._lock:
            return self._log.send_times(chat_id)

    def most_sends_within(self, chat_id: int | str, seconds: float) -> int:
        """The most messages delivered to the chat in any window of ``seconds`` (its peak rate)."""
        return telegram_calls.busiest_window(self.send_times(chat_id), seconds)

    def downloads(self, file_id: str | None = None, *, node: str | None = None) -> int:
        """Times a pushed file (without ``file_id``: any) was downloaded whole (by ``node``)."""
        with self._lock:
            return self._files.downloads(file_id, node)

    def early_retries(self) -> list[EarlyRetry]:
        """Calls into a chat made before the ``retry_after`` of its last 429 had passed."""
        return telegram_calls.early_retries(self.calls())

    # -- faults -------------------------------------------------------------------------------

    def add_fault(self, *rules: FaultRule) -> None:
        """Activate fault rules (consulted in order; see ``telegram_faults``)."""
        self._faults.add(*rules)

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        self._faults.clear()

    @property
    def faults(self) -> list[FaultRule]:
        """The active rules with their ``matched``/``fired`` counters."""
        return self._faults.rules

    # -- HTTP ---------------------------------------------------------------------------------

    name = "fake Telegram server"

    def app(self) -> web.Application:
        """The aiohttp application: the Bot API and the ``/_fake`` control endpoints."""
        from duragent.testing._telegram_control import control_routes

        app = web.Application(client_max_size=MAX_REQUEST_SIZE)
        files = FileServer(self._files, lambda: self.token, self._faults, self._lock, self._pause)
        for prefix in ("", NODE_PREFIX):  # unprefixed: node "a"
            app.router.add_route("*", prefix + "/bot{token}/{method}", self._bot_api)
            app.router.add_get(prefix + "/file/bot{token}/{path:.+}", files.serve)
        app.router.add_routes(control_routes(self))
        return app

    async def _bot_api(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        method = request.match_info["method"]
        node = node_of(request)
        if request.match_info["token"] != self.token:
            return self._answer(method, {}, arrived, *error(401, "Unauthorized"), node=node)
        try:
            params = await read_params(request)
        except ConnectionResetError:  # the client died mid-request (a crash test's SIGKILL)
            log.debug("%s: the client went away before its request was read", method)
            return web.Response(status=499)
        if isinstance(params, tuple):
            return self._answer(method, {}, arrived, *params, node=node)
        chat_id = chat_id_of(params)
        choice = self._faults.choose(method, chat_id)
        if choice.delay:
            await self._pause(choice.delay)
        fault = choice.fault
        if fault is not None and fault.kind == "drop":
            return self._drop(request, method, params, arrived, None, fault.kind)
        if fault is not None and fault.kind != "drop_after":
            return self._answer(
                method, params, arrived, *fault.answer(), fault=fault.kind, node=node
            )
        resolved = await self._outbound.resolve_url(method, params)  # a file given by URL
        if isinstance(resolved, tuple):
            status, body = resolved
        elif method == "getUpdates":
            status, body = await self._poll(params)
        else:
            with self._lock:
                self._outbound.node = node  # a file sent is that node's
                status, body = self._methods.call(method, resolved)
        if fault is not None:
            return self._drop(request, method, params, arrived, body, fault.kind)
        return self._answer(method, params, arrived, status, body, node=node)

    def _answer(
        self,
        method: str,
        params: dict[str, Any],
        arrived: float,
        status: int,
        body: dict[str, Any],
        *,
        fault: str | None = None,
        node: str = DEFAULT_NODE,
    ) -> web.Response:
        with self._lock:
            self._log.add(
                method,
                params,
                arrived,
                time.monotonic(),
                status,
                body,
                chat_id=chat_id_of(params),
                fault=fault,
                node=node,
            )
        return respond(status, body)

    def _drop(
        self,
        request: web.Request,
        method: str,
        params: dict[str, Any],
        arrived: float,
        applied: dict[str, Any] | None,
        kind: str,
    ) -> web.Response:
        with self._lock:
            self._log.add(
                method,
                params,
                arrived,
                time.monotonic(),
                0,
                applied,
                chat_id=chat_id_of(params),
                fault=kind,
                node=node_of(request),
            )
        if request.transport is not None:
            request.transport.abort()
        # aiohttp finds the transport closed when it writes this, and lets it go quietly.
        return web.Response(status=500)

    async def _poll(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """getUpdates: answer at once when updates wait, else wait for one or the timeout."""
        self._poll_generation += 1
        generation = self._poll_generation
        if self._arrived is None:
            self._arrived = asyncio.Event()
        self._wake()  # an older poll still waiting ends with 409, as on Telegram
        timeout = params.get("timeout", 0)
        try:
            wait = min(max(float(timeout), 0.0), MAX_POLL_TIMEOUT)
        except (TypeError, ValueError):
            wait = 0.0
        assert self._loop is not None
        assert self._closing is not None
        deadline = self._loop.time() + wait
        while True:
            arrived = self._arrived
            with self._lock:
                status, body = self._methods.call("getUpdates", params)
            remaining = deadline - self._loop.time()
            if status != 200 or body["result"] or remaining <= 0 or self._closing.is_set():
                return status, body
            assert arrived is not None
            self._polls_waiting += 1
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), remaining)
            finally:
                self._polls_waiting -= 1
            if generation != self._poll_generation:
                return error(409, _CONFLICT)

    def _on_stopping(self) -> None:
        self._wake()  # waiting polls see ``_closing`` and answer what they have
        self._arrived = None  # a restart runs on another loop

    def _wake(self) -> None:
        """Wake every waiting poll (runs on the server's loop)."""
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = asyncio.Event()

    def _notify(self) -> None:
        """Wake waiting polls from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is shutting down
                loop.call_soon_threadsafe(self._wake)


if __name__ == "__main__":
    from duragent.testing._telegram_cli import main

    sys.exit(main())
