"""Files users send through the fake Telegram, fetched by the real python-telegram-bot client.

``getFile`` and the file server are what a gateway uses to turn a photo, voice note or
document into bytes; these tests drive them through ``Bot.get_file`` and
``File.download_as_bytearray``, so PTB's own URL building (``base_file_url``) and error
mapping are exercised against the fake as against Telegram.
"""

from __future__ import annotations

import base64

import httpx
import pytest
import telegram

from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.telegram_faults import FaultRule
from tests.testing.images import png

CHAT = 42
OGG = b"OggS\x00\x02" + bytes(range(200))


pytestmark = pytest.mark.usefixtures("timedelta_periods")


async def only_message(bot: telegram.Bot) -> telegram.Message:
    (update,) = await bot.get_updates()
    assert update.message is not None
    return update.message


async def download(bot: telegram.Bot, file_id: str) -> bytes:
    found = await bot.get_file(file_id)
    return bytes(await found.download_as_bytearray())


async def test_a_photo_arrives_in_several_sizes_and_its_largest_downloads_once(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    picture = png(1000, 500)
    tg.push_photo(CHAT, picture, caption="look at /this")
    message = await only_message(bot)
    sizes = [(p.width, p.height) for p in message.photo]
    assert sizes == [(90, 45), (320, 160), (800, 400), (1000, 500)]
    assert len({p.file_id for p in message.photo}) == 4
    assert message.caption == "look at /this"
    assert [e.type for e in message.caption_entities] == ["bot_command"]
    largest = message.photo[-1]
    assert largest.file_size == len(picture)
    found = await bot.get_file(largest.file_id)
    assert (found.file_size, found.file_unique_id) == (len(picture), largest.file_unique_id)
    assert found.file_path is not None
    assert found.file_path.startswith(f"{tg.base_file_url}{tg.token}/photos/")
    assert bytes(await found.download_as_bytearray()) == picture
    assert tg.downloads(largest.file_id) == 1
    assert tg.downloads(message.photo[0].file_id) == 0
    assert tg.calls("getFile")[0].params["file_id"] == largest.file_id


async def test_given_thumbnails_are_the_smaller_sizes(tg: FakeTelegram, bot: telegram.Bot) -> None:
    small, large = png(90, 60), png(1280, 853)
    tg.push_photo(CHAT, large, thumbnails=[small])
    message = await only_message(bot)
    assert [(p.width, p.height, p.file_size) for p in message.photo] == [
        (90, 60, len(small)),
        (1280, 853, len(large)),
    ]
    assert await download(bot, message.photo[0].file_id) == small


async def test_voice_audio_document_and_video_carry_their_bytes_and_fields(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.push_voice(CHAT, OGG, duration=4)
    tg.push_audio(CHAT, b"ID3song", file_name="song.mp3", title="Song", performer="Band")
    tg.push_document(CHAT, b"col1,col2\n1,2\n", "table.csv", caption="the numbers")
    tg.push_video(CHAT, b"\x00\x00\x00\x18ftypmp42", width=1920, height=1080, duration=9)
    updates = await bot.get_updates()
    voice, audio, document, video = (u.message for u in updates)
    assert voice is not None
    assert voice.voice is not None
    assert (voice.voice.mime_type, voice.voice.file_size) == ("audio/ogg", len(OGG))
    assert voice.voice.duration.total_seconds() == 4  # type: ignore[union-attr]
    assert audio is not None
    assert audio.audio is not None
    assert (audio.audio.title, audio.audio.performer, audio.audio.mime_type) == (
        "Song",
        "Band",
        "audio/mpeg",
    )
    assert document is not None
    assert document.document is not None
    assert (document.document.file_name, document.document.mime_type) == ("table.csv", "text/csv")
    assert document.caption == "the numbers"
    assert video is not None
    assert video.video is not None
    assert (video.video.width, video.video.height, video.video.mime_type) == (
        1920,
        1080,
        "video/mp4",
    )
    voice_file = await bot.get_file(voice.voice.file_id)
    assert voice_file.file_path is not None
    assert voice_file.file_path.endswith(".oga")
    assert bytes(await voice_file.download_as_bytearray()) == OGG
    assert await download(bot, audio.audio.file_id) == b"ID3song"
    assert await download(bot, document.document.file_id) == b"col1,col2\n1,2\n"
    assert await download(bot, video.video.file_id) == b"\x00\x00\x00\x18ftypmp42"
    assert tg.downloads() == 4


async def test_an_unknown_file_id_is_refused_as_telegram_does(bot: telegram.Bot) -> None:
    with pytest.raises(telegram.error.BadRequest, match="Invalid file_id"):
        await bot.get_file("no-such-file")


async def test_a_file_over_the_bots_limit_is_too_big_to_get() -> None:
    async with (
        FakeTelegram(file_size_limit=1000) as tg,
        telegram.Bot(tg.token, base_url=tg.base_url) as bot,
    ):
        tg.push_document(CHAT, b"x" * 1001, "big.bin")
        tg.push_document(CHAT, b"x" * 1000, "fits.bin")
        big, fits = (u.message for u in await bot.get_updates())
        assert big is not None
        assert big.document is not None
        assert fits is not None
        assert fits.document is not None
        with pytest.raises(telegram.error.BadRequest, match="File is too big"):
            await bot.get_file(big.document.file_id)
        assert (await bot.get_file(fits.document.file_id)).file_size == 1000


async def test_the_default_limit_is_telegrams_twenty_megabytes(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.push_document(CHAT, bytes(20 * 1024 * 1024 + 1), "huge.bin")
    message = await only_message(bot)
    assert message.document is not None
    with pytest.raises(telegram.error.BadRequest, match="File is too big"):
        await bot.get_file(message.document.file_id)


async def test_the_file_server_wants_the_bots_token(tg: FakeTelegram, bot: telegram.Bot) -> None:
    tg.push_document(CHAT, b"secret", "a.txt")
    message = await only_message(bot)
    assert message.document is not None
    found = await bot.get_file(message.document.file_id)
    assert found.file_path is not None
    wrong = found.file_path.replace(tg.token, "999:WRONG")
    async with httpx.AsyncClient() as http:
        answer = await http.get(wrong)
        assert answer.status_code == 404
        assert answer.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
        assert (await http.get(found.file_path)).content == b"secret"
    assert tg.downloads(message.document.file_id) == 1


async def test_a_download_that_fails_once_succeeds_on_the_retry_and_counts_once(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.server_failure(500, method="downloadFile", times=1))
    tg.push_voice(CHAT, OGG)
    message = await only_message(bot)
    assert message.voice is not None
    found = await bot.get_file(message.voice.file_id)
    with pytest.raises(telegram.error.NetworkError):
        await found.download_as_bytearray()
    assert tg.downloads(message.voice.file_id) == 0
    assert bytes(await found.download_as_bytearray()) == OGG
    assert tg.downloads(message.voice.file_id) == 1
    assert tg.faults[0].fired == 1


async def test_get_file_obeys_the_fault_rules_of_the_bot_api(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.too_many_requests(3, method="getFile", times=1))
    tg.push_voice(CHAT, OGG)
    message = await only_message(bot)
    assert message.voice is not None
    with pytest.raises(telegram.error.RetryAfter):
        await bot.get_file(message.voice.file_id)
    assert await download(bot, message.voice.file_id) == OGG


def test_a_push_telegram_could_not_send_fails_in_the_test() -> None:
    fake = FakeTelegram()
    with pytest.raises(ValueError, match="needs bytes"):
        fake.push_voice(CHAT, b"")
    with pytest.raises(ValueError, match="kind must be one of"):
        fake.push_media(CHAT, "sticker", b"x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="thumbnails"):
        fake.push_document(CHAT, b"x", thumbnails=[b"y"])


async def test_another_process_pushes_media_and_reads_downloads_over_http(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    async with httpx.AsyncClient(base_url=tg.url) as http:
        body = {
            "chat_id": CHAT,
            "kind": "voice",
            "data_base64": base64.b64encode(OGG).decode(),
            "duration": 2,
        }
        pushed = (await http.post("/_fake/media", json=body)).json()
        file_id = pushed["message"]["voice"]["file_id"]
        assert await download(bot, file_id) == OGG
        counted = (await http.get("/_fake/downloads", params={"file_id": file_id})).json()
        assert counted == {"file_id": file_id, "downloads": 1}
        bad = await http.post("/_fake/media", json={**body, "data_base64": "***"})
        assert bad.status_code == 400
        assert "base64" in bad.json()["error"]
        unknown = await http.get("/_fake/downloads", params={"file_id": "nope"})
        assert unknown.status_code == 400
