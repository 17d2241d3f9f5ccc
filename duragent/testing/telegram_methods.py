"""The Bot API methods the fake Telegram answers, with Telegram's validation and error texts.

Each method takes the call's decoded parameters and returns ``(HTTP status, JSON body)`` shaped
exactly as Telegram's, so python-telegram-bot maps errors to the same exceptions it raises in
production (400 → ``BadRequest``, 401 → ``InvalidToken``, 409 → ``Conflict``). Only the rules a
chat gateway can break are checked: text length after HTML parsing, malformed HTML, empty text,
unknown chats (with ``strict_chats``), replies to missing messages, edits that change nothing.
``getUpdates`` here answers only what is available now; the long-poll wait is the server's.
Files sent, drafts, deletions and the command menu are methods of their own modules
(``_telegram_outbound_media``, ``_telegram_edits``, ``_telegram_commands``), added to ``table``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from duragent.testing.telegram_html import EntityParseError, ParsedText, parse_html
from duragent.testing.telegram_store import ChatStore, UpdateQueue

__all__ = ["MAX_MESSAGE_LENGTH", "Answer", "BotMethods", "chat_id_of", "error", "int_param", "ok"]

Answer = tuple[int, dict[str, Any]]
MAX_MESSAGE_LENGTH = 4096
"""Characters of visible text (after entity parsing) a message may hold."""
_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)


def ok(result: Any, description: str | None = None) -> Answer:
    """A successful answer."""
    body: dict[str, Any] = {"ok": True, "result": result}
    if description:
        body["description"] = description
    return 200, body


def error(code: int, description: str) -> Answer:
    """An error answer in Telegram's shape."""
    return code, {"ok": False, "error_code": code, "description": description}


def chat_id_of(params: dict[str, Any]) -> int | str | None:
    """The call's ``chat_id`` (numeric strings as numbers, ``@channel`` names as they are)."""
    value = params.get("chat_id")
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value if isinstance(value, int | str) else None


def int_param(params: dict[str, Any], name: str, default: int | None = None) -> int | None:
    """An integer parameter (form values arrive as text), or ``default``."""
    value = params.get(name, default)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value if isinstance(value, int) else default


class BotMethods:
    """Bot API semantics over a ``ChatStore`` and an ``UpdateQueue`` (not thread-safe)."""

    def __init__(self, bot: dict[str, Any], store: ChatStore, updates: UpdateQueue) -> None:
        self.bot = bot
        self.store = store
        self.updates = updates
        self.webhook_url = ""
        self.allowed_updates: frozenset[str] | None = None
        self.table: dict[str, Callable[[dict[str, Any]], Answer]] = {
            "getMe": lambda _params: ok(self.bot),
            "getUpdates": self.get_updates,
            "sendMessage": self.send_message,
            "sendChatAction": self.send_chat_action,
            "editMessageText": self.edit_message_text,
            "editMessageReplyMarkup": self.edit_message_reply_markup,
            "answerCallbackQuery": self.answer_callback_query,
            "setWebhook": self.set_webhook,
            "deleteWebhook": self.delete_webhook,
            "getWebhookInfo": self.get_webhook_info,
            "close": lambda _params: ok(True),
            "logOut": lambda _params: ok(True),
        }

    def call(self, method: str, params: dict[str, Any]) -> Answer:
        """Answer one call; an unknown method gets Telegram's 404 "method not found"."""
        handler = self.table.get(method)
        if handler is None:
            return error(404, "Not Found: method not found")
        return handler(params)

    # -- updates ------------------------------------------------------------------------------

    def get_updates(self, params: dict[str, Any]) -> Answer:
        """Confirm below ``offset`` and return what is pending now (the server does the wait)."""
        if self.webhook_url:
            return error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        allowed = params.get("allowed_updates")
        if isinstance(allowed, list):
            self.allowed_updates = frozenset(allowed) if allowed else None
        self.updates.confirm(int_param(params, "offset"))
        limit = min(max(int_param(params, "limit", 100) or 100, 1), 100)
        return ok(self.updates.available(limit, self.allowed_updates))

    def set_webhook(self, params: dict[str, Any]) -> Answer:
        """Remember the webhook (the fake never posts to it: tests use long polling)."""
        if params.get("drop_pending_updates") is True:
            self.updates.drop_all()
        self.webhook_url = str(params.get("url") or "")
        return ok(True, "Webhook was set" if self.webhook_url else "Webhook was deleted")

    def delete_webhook(self, params: dict[str, Any]) -> Answer:
        """Forget the webhook; ``drop_pending_updates`` forgets pending updates too."""
        if params.get("drop_pending_updates") is True:
            self.updates.drop_all()
        was_set, self.webhook_url = bool(self.webhook_url), ""
        return ok(True, "Webhook was deleted" if was_set else "Webhook is already deleted")

    def get_webhook_info(self, _params: dict[str, Any]) -> Answer:
        """The webhook and how many updates wait."""
        return ok(
            {
                "url": self.webhook_url,
                "has_custom_certificate": False,
                "pending_update_count": len(self.updates.pending()),
            }
        )

    # -- messages -----------------------------------------------------------------------------

    def render(self, params: dict[str, Any]) -> ParsedText | Answer:
        """The visible text and entities of ``text``/``parse_mode``, or the error answer."""
        text = params.get("text")
        if not isinstance(text, str) or not text:
            return error(400, "Bad Request: message text is empty")
        parse_mode = params.get("parse_mode")
        if parse_mode in (None, ""):
            entities = params.get("entities")
            parsed = ParsedText(text, entities if isinstance(entities, list) else [])
        elif str(parse_mode).lower() == "html":
            try:
                parsed = parse_html(text)
            except EntityParseError as exc:
                return error(400, f"Bad Request: can't parse entities: {exc}")
        elif parse_mode in ("Markdown", "MarkdownV2"):
            parsed = ParsedText(text)  # not parsed: duragent's gateways send HTML
        else:
            return error(400, f"Bad Request: unsupported parse_mode {parse_mode!r}")
        if not parsed.text.strip():
            return error(400, "Bad Request: message text is empty")
        if len(parsed.text) > MAX_MESSAGE_LENGTH:
            return error(400, "Bad Request: message is too long")
        return parsed

    def send_message(self, params: dict[str, Any]) -> Answer:
        """Validate, number and keep a message of the bot; answer the ``Message``."""
        chat_id = chat_id_of(params)
        if chat_id is None:
            return error(400, "Bad Request: chat_id is empty")
        parsed = self.render(params)
        if not isinstance(parsed, ParsedText):
            return parsed
        message = self.new_message(chat_id, params)
        if isinstance(message, tuple):
            return message
        message["text"] = parsed.text
        if parsed.entities:
            message["entities"] = parsed.entities
        self.store.remember(dict(message))  # edits change the kept copy, not this answer
        return ok(message)

    def new_message(self, chat_id: int | str, params: dict[str, Any]) -> dict[str, Any] | Answer:
        """A numbered bot message in the chat with its reply, thread and keyboard, not kept yet.

        The caller adds the content (text, or a file and its caption) and ``store.remember`` s
        it; an unknown chat, a reply to a missing message or a bad keyboard is the error answer.
        """
        chat = self.store.known_chat(chat_id)
        if chat is None:
            return error(400, "Bad Request: chat not found")
        replied = self._replied(chat_id, params)
        if isinstance(replied, tuple):
            return replied
        markup = _inline_markup(params.get("reply_markup"))
        if isinstance(markup, tuple):
            return markup
        message: dict[str, Any] = {"message_id": self.store.next_message_id(chat_id)}
        if chat["type"] == "channel":
            message["sender_chat"] = chat
        else:
            message["from"] = self.bot
        message.update(chat=chat, date=self.store.now())
        thread = int_param(params, "message_thread_id")
        if thread is not None:
            message["message_thread_id"] = thread
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        if replied is not None:
            message["reply_to_message"] = {
                k: v for k, v in replied.items() if k != "reply_to_message"
            }
        if markup is not None:
            message["reply_markup"] = markup
        return message

    def _replied(
        self, chat_id: int | str, params: dict[str, Any]
    ) -> dict[str, Any] | Answer | None:
        reply = params.get("reply_parameters")
        allow_missing = params.get("allow_sending_without_reply") is True
        if isinstance(reply, dict):
            message_id = int_param(reply, "message_id")
            allow_missing = reply.get("allow_sending_without_reply") is True
        else:
            message_id = int_param(params, "reply_to_message_id")
        if message_id is None:
            return None
        replied = self.store.message(chat_id, message_id)
        if replied is None and not allow_missing:
            return error(400, "Bad Request: message to be replied not found")
        return replied

    def _bot_message(self, params: dict[str, Any]) -> dict[str, Any] | Answer:
        chat_id, message_id = chat_id_of(params), int_param(params, "message_id")
        if chat_id is None or message_id is None:
            return error(400, "Bad Request: message identifier is not specified")
        message = self.store.message(chat_id, message_id)
        if message is None:
            return error(400, "Bad Request: message to edit not found")
        if message.get("from", self.bot)["id"] != self.bot["id"]:
            return error(400, "Bad Request: message can't be edited")
        return message

    def edit_message_text(self, params: dict[str, Any]) -> Answer:
        """Change the text (and keyboard: none given removes it) of a message the bot sent."""
        if params.get("inline_message_id"):
            return ok(True)
        message = self._bot_message(params)
        if isinstance(message, tuple):
            return message
        parsed = self.render(params)
        if not isinstance(parsed, ParsedText):
            return parsed
        markup = _inline_markup(params.get("reply_markup"))
        if isinstance(markup, tuple):
            return markup
        unchanged = (
            message.get("text") == parsed.text
            and message.get("entities", []) == parsed.entities
            and message.get("reply_markup") == markup
        )
        if unchanged:
            return error(400, _NOT_MODIFIED)
        message["text"] = parsed.text
        _set_or_drop(message, "entities", parsed.entities or None)
        _set_or_drop(message, "reply_markup", markup)
        message["edit_date"] = self.store.now()
        return ok(dict(message))

    def edit_message_reply_markup(self, params: dict[str, Any]) -> Answer:
        """Replace (or, when none is given, remove) the inline keyboard of a bot message."""
        if params.get("inline_message_id"):
            return ok(True)
        message = self._bot_message(params)
        if isinstance(message, tuple):
            return message
        markup = _inline_markup(params.get("reply_markup"))
        if isinstance(markup, tuple):
            return markup
        if message.get("reply_markup") == markup:
            return error(400, _NOT_MODIFIED)
        _set_or_drop(message, "reply_markup", markup)
        message["edit_date"] = self.store.now()
        return ok(dict(message))

    def send_chat_action(self, params: dict[str, Any]) -> Answer:
        """Accept a known action ("typing", …) in a chat the bot may write to."""
        chat_id = chat_id_of(params)
        if chat_id is None:
            return error(400, "Bad Request: chat_id is empty")
        if params.get("action") not in _CHAT_ACTIONS:
            return error(400, "Bad Request: wrong parameter action in request")
        if self.store.known_chat(chat_id) is None:
            return error(400, "Bad Request: chat not found")
        return ok(True)

    def answer_callback_query(self, params: dict[str, Any]) -> Answer:
        """Close a button press once; a second answer or an unknown id is "query too old"."""
        if not self.store.answer_callback_query(str(params.get("callback_query_id", ""))):
            return error(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        return ok(True)


def _set_or_drop(message: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        message.pop(key, None)
    else:
        message[key] = value


def _inline_markup(markup: Any) -> dict[str, Any] | Answer | None:
    """The inline keyboard a message will carry (other keyboards do not show on the message)."""
    if markup is None or not isinstance(markup, dict) or "inline_keyboard" not in markup:
        return None
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        return error(400, 'Bad Request: field "inline_keyboard" must be an Array of Arrays')
    for row in rows:
        for button in row:
            if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                return error(
                    400, "Bad Request: can't parse inline keyboard button: text is missing"
                )
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                return error(400, "Bad Request: BUTTON_DATA_INVALID")
    return {"inline_keyboard": rows}
