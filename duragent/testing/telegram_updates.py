"""Updates a test pushes into the fake Telegram: what users do in their chats.

Each function builds the update Telegram would send — a text (with ``@mention`` and
``/command`` entities computed), a photo, sticker or document with its caption, an edit of an
earlier message, a press of a button on a message the bot sent — keeps the message in the
``ChatStore`` (so the bot can reply to it) and queues the update for ``getUpdates``. Mistakes in
a test (pressing a button the message does not have, editing a message that was never sent)
raise at once instead of producing an update Telegram could never send.
"""

from __future__ import annotations

import itertools
from typing import Any

from duragent.testing.telegram_objects import (
    ChatType,
    TelegramUser,
    detect_entities,
    document_object,
    photo_sizes,
    sticker_object,
    user_object,
)
from duragent.testing.telegram_store import ChatStore, UpdateQueue

__all__ = ["callback_query_update", "edited_message_update", "message_update", "sender_for"]

_query_ids = itertools.count(1)


def sender_for(
    chat_id: int,
    user_id: int | None = None,
    username: str | None = None,
    first_name: str | None = None,
) -> TelegramUser:
    """The sender named by a push (defaults: the chat's user, see ``TelegramUser.default_for``)."""
    default = TelegramUser.default_for(chat_id if user_id is None else user_id)
    return TelegramUser(
        id=default.id,
        first_name=first_name or default.first_name,
        username=username if username is not None else default.username,
    )


def message_update(
    store: ChatStore,
    queue: UpdateQueue,
    chat_id: int,
    text: str | None = None,
    *,
    sender: TelegramUser,
    chat_type: ChatType | None = None,
    chat_title: str | None = None,
    entities: list[dict[str, Any]] | None = None,
    reply_to_message_id: int | None = None,
    message_thread_id: int | None = None,
    caption: str | None = None,
    photo: bool = False,
    sticker: str | None = None,
    document: str | None = None,
) -> dict[str, Any]:
    """Queue a user's message (or a channel post) and return its update."""
    if text is None and not (photo or sticker or document):
        raise ValueError("a pushed message needs text, photo, sticker or document")
    if text is not None and (photo or sticker or document):
        raise ValueError("a message has text or media (with an optional caption), not both")
    chat = store.chat(
        chat_id,
        chat_type,
        title=chat_title,
        sender=sender,
        is_forum=message_thread_id is not None and chat_type == "supergroup",
    )
    message_id = store.next_message_id(chat_id)
    message: dict[str, Any] = {"message_id": message_id}
    if chat["type"] == "channel":
        message["sender_chat"] = chat
    else:
        message["from"] = user_object(sender)
    message.update(chat=chat, date=store.now())
    if message_thread_id is not None:
        message["message_thread_id"] = message_thread_id
        message["is_topic_message"] = bool(chat.get("is_forum"))
    if reply_to_message_id is not None:
        replied = store.message(chat_id, reply_to_message_id)
        if replied is None:
            raise LookupError(f"chat {chat_id} has no message {reply_to_message_id} to reply to")
        message["reply_to_message"] = {k: v for k, v in replied.items() if k != "reply_to_message"}
    if text is not None:
        message["text"] = text
        found = detect_entities(text) if entities is None else entities
        if found:
            message["entities"] = found
    else:
        file_id = f"file-{chat_id}-{message_id}"
        if photo:
            message["photo"] = photo_sizes(file_id)
        elif sticker is not None:
            message["sticker"] = sticker_object(file_id, sticker)
        elif document is not None:
            message["document"] = document_object(file_id, document, "application/octet-stream")
        if caption is not None:
            message["caption"] = caption
            found = detect_entities(caption) if entities is None else entities
            if found:
                message["caption_entities"] = found
    store.remember(message)
    return queue.push("channel_post" if chat["type"] == "channel" else "message", message)


def edited_message_update(
    store: ChatStore, queue: UpdateQueue, chat_id: int, message_id: int, text: str
) -> dict[str, Any]:
    """Queue the edit of a user's earlier text message and return its update."""
    original = store.message(chat_id, message_id)
    if original is None:
        raise LookupError(f"chat {chat_id} has no message {message_id} to edit")
    if "text" not in original:
        raise ValueError(f"message {message_id} in chat {chat_id} has no text to edit")
    original["text"] = text
    entities = detect_entities(text)
    if entities:
        original["entities"] = entities
    else:
        original.pop("entities", None)
    original["edit_date"] = store.now()
    edited = dict(original)
    kind = "edited_channel_post" if edited["chat"]["type"] == "channel" else "edited_message"
    return queue.push(kind, edited)


def callback_query_update(
    store: ChatStore,
    queue: UpdateQueue,
    chat_id: int,
    message_id: int,
    *,
    sender: TelegramUser,
    data: str | None = None,
    button: str | None = None,
    stale: bool = False,
) -> dict[str, Any]:
    """Queue a press of a button of a bot message, by ``data`` or by the button's label.

    ``stale``: the button is no longer on the message (the bot edited it away) but was still
    on the user's screen, as with a double tap or a slow network; Telegram delivers that press
    too, so ``data`` is taken as given.
    """
    message = store.message(chat_id, message_id)
    if message is None:
        raise LookupError(f"chat {chat_id} has no message {message_id} with buttons")
    buttons = [b for row in message.get("reply_markup", {}).get("inline_keyboard", []) for b in row]
    pressed = [
        b
        for b in buttons
        if (data is not None and b.get("callback_data") == data)
        or (button is not None and b.get("text") == button)
    ]
    if not pressed and stale and data is not None:
        pressed = [{"callback_data": data}]
    if not pressed or "callback_data" not in pressed[0]:
        offered = [(b.get("text"), b.get("callback_data")) for b in buttons]
        raise LookupError(
            f"message {message_id} in chat {chat_id} has no button with "
            f"{'data ' + repr(data) if data is not None else 'label ' + repr(button)}; "
            f"its buttons (label, data): {offered}"
        )
    query_id = f"{next(_query_ids)}{abs(chat_id) % 10_000:04d}"
    store.open_callback_query(query_id)
    query = {
        "id": query_id,
        "from": user_object(sender),
        "message": dict(message),
        "chat_instance": f"ci{chat_id}",
        "data": pressed[0]["callback_data"],
    }
    return queue.push("callback_query", query)
