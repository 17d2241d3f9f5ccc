"""Files the bot sends through the fake Telegram, with the real python-telegram-bot client.

PTB uploads ``InputFile`` s as multipart/form-data, passes a ``file_id`` or a URL as text; the
fake answers each as Telegram does (a ``Message`` with the medium of its kind) and records
what the chat received, so a test can check the bytes, name, type and caption.
"""

from __future__ import annotations

import base64
from io import BytesIO

import httpx
import pytest
import telegram
from telegram import ReplyParameters

from duragent.testing._gateway_files import MediaFileServer
from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.telegram_faults import FaultRule
from tests.testing.images import png

CHAT = 42
OGG = b"OggS\x00\x02" + bytes(range(120))
CSV = b"day,temp\nmon,21\ntue,23\n"

pytestmark = pytest.mark.usefixtures("timedelta_periods")


async def download(bot: telegram.Bot, file_id: str) -> bytes:
    found = await bot.get_file(file_id)
    return bytes(await found.download_as_bytearray())


async def test_an_uploaded_photo_arrives_in_sizes_with_its_caption_and_is_recorded(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    picture = png(640, 480)
    question = await bot.send_message(CHAT, "show me the chart")
    sent = await bot.send_photo(
        CHAT,
        photo=BytesIO(picture),
        caption="<b>Chart</b> of the week",
        parse_mode="HTML",
        reply_parameters=ReplyParameters(question.message_id),
    )
    assert [(p.width, p.height) for p in sent.photo] == [(90, 67), (320, 240), (640, 480)]
    assert sent.photo[-1].file_size == len(picture)
    assert sent.photo[-1].file_unique_id
    assert sent.caption == "Chart of the week"
    assert [(e.type, e.offset, e.length) for e in sent.caption_entities] == [("bold", 0, 5)]
    assert sent.reply_to_message is not None
    assert sent.reply_to_message.message_id == question.message_id
    (record,) = tg.sent_files(CHAT)
    assert (record.kind, record.data, record.source) == ("photo", picture, "upload")
    assert (record.caption, record.parse_mode) == ("Chart of the week", "HTML")
    assert (record.message_id, record.file_id) == (sent.message_id, sent.photo[-1].file_id)
    assert tg.message_text(CHAT, sent.message_id) == "Chart of the week"
    assert await download(bot, sent.photo[-1].file_id) == picture  # getFile serves it back
    assert tg.sent_messages(CHAT) == ["show me the chart"]  # texts only, as before


async def test_documents_voice_notes_audio_and_video_carry_their_names_types_and_fields(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    document = await bot.send_document(CHAT, document=CSV, filename="temps.csv", caption="data")
    voice = await bot.send_voice(CHAT, voice=OGG, filename="note.ogg", duration=3)
    audio = await bot.send_audio(
        CHAT, audio=b"ID3tune", filename="tune.mp3", title="Tune", performer="Band"
    )
    video = await bot.send_video(
        CHAT, video=b"\x00\x00\x00\x18ftypmp42", filename="clip.mp4", width=1280, height=720
    )
    assert document.document is not None
    assert (document.document.file_name, document.document.mime_type) == ("temps.csv", "text/csv")
    assert (document.document.file_size, document.caption) == (len(CSV), "data")
    assert voice.voice is not None
    assert (voice.voice.mime_type, voice.voice.duration.total_seconds()) == ("audio/ogg", 3)  # type: ignore[union-attr]
    assert audio.audio is not None
    assert (audio.audio.title, audio.audio.performer, audio.audio.file_name) == (
        "Tune",
        "Band",
        "tune.mp3",
    )
    assert video.video is not None
    assert (video.video.width, video.video.height, video.video.mime_type) == (
        1280,
        720,
        "video/mp4",
    )
    kinds = [(f.kind, f.file_name, f.mime_type) for f in tg.sent_files(CHAT)]
    assert kinds == [
        ("document", "temps.csv", "text/csv"),
        ("voice", "note.ogg", "audio/ogg"),
        ("audio", "tune.mp3", "audio/mpeg"),
        ("video", "clip.mp4", "video/mp4"),
    ]
    assert [f.data for f in tg.sent_files(CHAT, "voice")] == [OGG]
    assert await download(bot, document.document.file_id) == CSV


async def test_a_file_id_sends_the_same_file_again_and_only_as_its_own_kind(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    first = await bot.send_document(CHAT, document=CSV, filename="temps.csv")
    assert first.document is not None
    again = await bot.send_document(CHAT + 1, document=first.document.file_id)
    assert again.document is not None
    assert again.document.file_unique_id == first.document.file_unique_id
    (resent,) = tg.sent_files(CHAT + 1)
    assert (resent.source, resent.data) == ("file_id", CSV)
    with pytest.raises(
        telegram.error.BadRequest, match=r"(?i)can't use file of type Document as Voice"
    ):
        await bot.send_voice(CHAT, voice=first.document.file_id)
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)wrong file identifier"):
        await bot.send_photo(CHAT, photo="photo-999")


async def test_a_photo_pushed_by_a_user_can_be_sent_back_by_its_file_id(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    picture = png(200, 100)
    update = tg.push_photo(CHAT, picture)
    largest = update["message"]["photo"][-1]["file_id"]
    sent = await bot.send_photo(CHAT, photo=largest)
    assert [(p.file_id, p.width, p.height) for p in sent.photo] == [(largest, 200, 100)]
    assert tg.sent_files(CHAT, "photo")[0].data == picture


async def test_a_url_is_fetched_by_the_fake_as_telegram_fetches_it(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    picture = png(300, 200)
    async with MediaFileServer() as host:
        url = host.add(picture, "chart.png")
        sent = await bot.send_photo(CHAT, photo=url, caption="from the web")
        assert host.downloads(url) == 1
        (record,) = tg.sent_files(CHAT)
        assert (record.source, record.url, record.data) == ("url", url, picture)
        assert sent.photo[-1].file_size == len(picture)
        assert tg.calls("sendPhoto")[0].params["photo"] == url  # the call as the bot made it
        pdf = await bot.send_document(CHAT, document=host.add(b"%PDF-1.7 x", "r.pdf"))
        assert pdf.document is not None
        assert (pdf.document.file_name, pdf.document.mime_type) == ("r.pdf", "application/pdf")
        with pytest.raises(
            telegram.error.BadRequest, match=r"(?i)wrong type of the web page content"
        ):
            await bot.send_document(CHAT, document=host.add(CSV, "temps.csv"))
        with pytest.raises(
            telegram.error.BadRequest, match=r"(?i)wrong type of the web page content"
        ):
            await bot.send_photo(CHAT, photo=host.add(b"not an image", "x.png"))
        gone = host.add(picture, "gone.png")
        host.expire(gone)
        with pytest.raises(telegram.error.BadRequest, match=r"(?i)failed to get HTTP URL content"):
            await bot.send_photo(CHAT, photo=gone)
    assert len(tg.sent_files(CHAT)) == 2


async def test_files_telegram_would_refuse_are_refused(tg: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)IMAGE_PROCESS_FAILED"):
        await bot.send_photo(CHAT, photo=b"%PDF-1.7 not a picture")
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)PHOTO_INVALID_DIMENSIONS"):
        await bot.send_photo(CHAT, photo=png(2100, 100))
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)caption is too long"):
        await bot.send_document(CHAT, document=CSV, filename="t.csv", caption="x" * 1025)
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_document(CHAT, document=CSV, caption="<b>open", parse_mode="HTML")
    async with httpx.AsyncClient(base_url=f"{tg.base_url}{tg.token}") as http:
        answer = (await http.post("/sendDocument", data={"chat_id": str(CHAT)})).json()
    assert answer["description"] == "Bad Request: there is no document in the request"
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)file must be non-empty"):
        await bot.send_document(CHAT, document=b"", filename="empty.txt")
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)replied not found"):
        await bot.send_voice(CHAT, voice=OGG, reply_parameters=ReplyParameters(999))
    assert tg.sent_files() == []


async def test_faults_apply_to_sends_of_files(tg: FakeTelegram, bot: telegram.Bot) -> None:
    tg.add_fault(
        FaultRule.too_many_requests(5, method="sendPhoto", times=1),
        FaultRule.dropped(after_applying=True, method="sendDocument", times=1),
    )
    with pytest.raises(telegram.error.RetryAfter):
        await bot.send_photo(CHAT, photo=png(10, 10))
    with pytest.raises(telegram.error.NetworkError):
        await bot.send_document(CHAT, document=CSV, filename="t.csv")
    assert [f.kind for f in tg.sent_files(CHAT)] == ["document"]  # delivered, answer lost
    await bot.send_photo(CHAT, photo=png(10, 10))
    early = [e.early.method for e in tg.early_retries()]
    assert early == ["sendDocument", "sendPhoto"]  # both inside the photo's retry_after


async def test_another_process_reads_the_sent_files_over_http(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    await bot.send_document(CHAT, document=CSV, filename="temps.csv", caption="numbers")
    await bot.send_voice(CHAT + 1, voice=OGG)
    async with httpx.AsyncClient(base_url=tg.url) as http:
        (found,) = (await http.get("/_fake/sent_files", params={"chat_id": CHAT})).json()
        assert base64.b64decode(found["data_base64"]) == CSV
        assert (found["file_name"], found["caption"], found["kind"]) == (
            "temps.csv",
            "numbers",
            "document",
        )
        light = (await http.get("/_fake/sent_files", params={"kind": "voice", "data": "0"})).json()
        assert [(f["chat_id"], f["size"], "data_base64" in f) for f in light] == [
            (CHAT + 1, len(OGG), False)
        ]
        bad = await http.get("/_fake/sent_files", params={"kind": "sticker"})
        assert bad.status_code == 400
        calls = (await http.get("/_fake/calls", params={"method": "sendDocument"})).json()
        assert calls[0]["params"]["document"]["size"] == len(CSV)  # the upload, as JSON
