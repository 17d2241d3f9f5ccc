"""Telegram updates become the kit's values: chat types, senders, mentions, captions, presses."""

from __future__ import annotations

from typing import Any

from telegram import Bot, Update

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import ButtonPress, InboundMessage, MediaRef
from duragent.gateways.telegram.updates import TelegramBotIdentity, translate

BOT = TelegramBotIdentity(user_id=999, username="DuraBot")
_bot = Bot("123:" + "a" * 35)


def _update(message: dict[str, Any] | None = None, **extra: Any) -> Update:
    data: dict[str, Any] = {"update_id": 1, **extra}
    if message is not None:
        data["message"] = {
            "message_id": 7,
            "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private"},
            "from": {"id": 5, "is_bot": False, "first_name": "Ada", "last_name": "L"},
            **message,
        }
    update = Update.de_json(data, _bot)
    assert update is not None
    return update


def _message(**message: Any) -> InboundMessage:
    value = translate(_update(message), BOT)
    assert isinstance(value, InboundMessage)
    return value


def test_a_private_chat_is_a_dm_with_the_sender_named_by_first_and_last_name() -> None:
    msg = _message(text="hello")
    assert (msg.gateway, msg.chat_id, msg.chat_type, msg.message_id) == (
        "telegram",
        "42",
        "dm",
        "7",
    )
    assert msg.sender.id == "5"
    assert msg.sender.label == "Ada L"
    assert msg.text == "hello"
    assert msg.content_kind == "text"


def test_a_supergroup_is_a_group_and_keeps_its_topic() -> None:
    msg = _message(
        text="hi", chat={"id": -100, "type": "supergroup", "title": "g"}, message_thread_id=3
    )
    assert (msg.chat_type, msg.chat_id, msg.thread_id) == ("group", "-100", "3")


def test_a_mention_of_the_bot_is_recognised_whatever_its_case() -> None:
    text = "hey @durabot look"
    msg = _message(text=text, entities=[{"type": "mention", "offset": 4, "length": 8}])
    assert msg.mentions_bot


def test_a_mention_of_someone_else_is_not_a_mention_of_the_bot() -> None:
    msg = _message(text="hey @other", entities=[{"type": "mention", "offset": 4, "length": 6}])
    assert not msg.mentions_bot


def test_a_text_mention_of_the_bots_user_id_is_a_mention() -> None:
    user = {"id": 999, "is_bot": True, "first_name": "Dura"}
    msg = _message(
        text="Dura, hi", entities=[{"type": "text_mention", "offset": 0, "length": 4, "user": user}]
    )
    assert msg.mentions_bot


def test_a_reply_to_one_of_the_bots_messages_triggers_it() -> None:
    replied = {
        "message_id": 3,
        "date": 1_700_000_000,
        "chat": {"id": 42, "type": "private"},
        "from": {"id": 999, "is_bot": True, "first_name": "Dura"},
        "text": "earlier answer",
    }
    msg = _message(text="and then?", reply_to_message=replied)
    assert msg.reply_to_bot
    assert msg.reply_to_message_id == "3"


def test_a_photo_with_a_caption_is_answered_from_its_caption() -> None:
    photo = [{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1}]
    msg = _message(photo=photo, caption="what is this?")
    assert (msg.text, msg.content_kind) == ("what is this?", "photo")


def _size(name: str, side: int, file_size: int | None) -> dict[str, Any]:
    size = {"file_id": name, "file_unique_id": f"u-{name}", "width": side, "height": side}
    return size if file_size is None else {**size, "file_size": file_size}


def test_a_photo_is_passed_on_as_its_largest_size_within_the_image_limit() -> None:
    sizes = [_size("s", 90, 1_000), _size("m", 320, 20_000), _size("x", 1280, 300_000)]
    message = _update({"photo": sizes, "caption": "hi"})
    [within] = _media(translate(message, BOT, max_photo_bytes=50_000))
    assert within == MediaRef(AttachmentKind.IMAGE, "m", unique_id="u-m", size=20_000)
    [largest] = _media(translate(message, BOT))
    assert largest.platform_id == "x"
    [over] = _media(translate(message, BOT, max_photo_bytes=10))
    assert over.platform_id == "x", "none fits: the largest, for the kit to refuse and say so"


def test_voice_audio_documents_and_videos_are_passed_on_with_what_telegram_says() -> None:
    voice = {"file_id": "v", "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg"}
    msg = _message(voice={**voice, "file_size": 900})
    assert msg.media == (
        MediaRef(AttachmentKind.VOICE, "v", unique_id="uv", mime="audio/ogg", size=900),
    )
    assert (msg.text, msg.content_kind) == (None, "voice")
    document = {"file_id": "d", "file_unique_id": "ud", "file_name": "a.pdf"}
    [doc] = _message(document={**document, "mime_type": "application/pdf"}).media
    assert (doc.kind, doc.name, doc.mime, doc.size) == (
        AttachmentKind.DOCUMENT,
        "a.pdf",
        "application/pdf",
        None,
    )
    video = {"file_id": "m", "file_unique_id": "um", "width": 2, "height": 2, "duration": 1}
    assert _message(video=video).media[0].kind is AttachmentKind.VIDEO
    audio = {"file_id": "a", "file_unique_id": "ua", "duration": 9, "file_name": "song.mp3"}
    assert _message(audio=audio).media[0].kind is AttachmentKind.AUDIO
    assert _message(text="just words").media == ()


def _media(value: InboundMessage | ButtonPress | None) -> tuple[MediaRef, ...]:
    assert isinstance(value, InboundMessage)
    return value.media


def test_a_sticker_without_text_is_passed_on_as_its_kind() -> None:
    sticker = {
        "file_id": "f",
        "file_unique_id": "u",
        "type": "regular",
        "width": 1,
        "height": 1,
        "is_animated": False,
        "is_video": False,
    }
    msg = _message(sticker=sticker)
    assert (msg.text, msg.content_kind, msg.media) == (None, "sticker", ())


def test_a_button_press_names_the_chat_the_presser_and_the_message_with_the_buttons() -> None:
    query = {
        "id": "cb1",
        "from": {"id": 5, "is_bot": False, "first_name": "Ada"},
        "chat_instance": "x",
        "data": "approve:allow_once",
        "message": {
            "message_id": 11,
            "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private"},
            "text": "Command requires approval",
        },
    }
    press = translate(_update(callback_query=query), BOT)
    assert isinstance(press, ButtonPress)
    assert (press.chat_id, press.callback_id, press.message_id, press.data, press.sender.id) == (
        "42",
        "cb1",
        "11",
        "approve:allow_once",
        "5",
    )


def test_an_edited_message_is_not_a_new_message() -> None:
    edited = {
        "message_id": 7,
        "date": 1_700_000_000,
        "edit_date": 1_700_000_100,
        "chat": {"id": 42, "type": "private"},
        "from": {"id": 5, "is_bot": False, "first_name": "Ada"},
        "text": "changed",
    }
    assert translate(_update(edited_message=edited), BOT) is None
