"""The pairing book: codes, expiry, the bound on waiting codes, and durability across reloads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from duragent.core.clock import use_time_source
from duragent.frontkit.pairing import (
    CODE_ALPHABET,
    CODE_LENGTH,
    CODE_TTL_SECONDS,
    MAX_PENDING,
    PairingBook,
    PairingFileError,
    book_for,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Iterator[Clock]:
    c = Clock()
    use_time_source(lambda: c.now)
    yield c
    use_time_source(time.time)


@pytest.fixture
def book(tmp_path: Path) -> PairingBook:
    return book_for(tmp_path / ".duragent", "bot")


def test_a_code_has_eight_characters_without_look_alikes(book: PairingBook) -> None:
    codes = {book.request("telegram", str(i), str(i), "x").code for i in range(MAX_PENDING)}
    for code in codes:
        assert code is not None
        assert len(code.code) == CODE_LENGTH == 8
        assert set(code.code) <= set(CODE_ALPHABET)
    assert not set("01OIL") & set(CODE_ALPHABET)
    assert len({c.code for c in codes if c}) == MAX_PENDING


def test_the_same_stranger_asking_again_gets_the_same_code(book: PairingBook) -> None:
    first = book.request("telegram", "7", "7", "eve")
    again = book.request("telegram", "7", "7", "eve")
    assert first.new
    assert not again.new
    assert again.code == first.code
    assert len(book.pending()) == 1


def test_the_same_id_on_another_gateway_is_another_stranger(book: PairingBook) -> None:
    a = book.request("telegram", "7", "7", "eve").code
    b = book.request("discord", "7", "7", "eve").code
    assert a is not None
    assert b is not None
    assert a.code != b.code


def test_at_most_a_few_codes_wait_so_strangers_cannot_flood_the_file(
    book: PairingBook,
) -> None:
    for i in range(MAX_PENDING):
        assert book.request("telegram", str(i), str(i), "x").code is not None
    refused = book.request("telegram", "99", "99", "flood")
    assert refused.code is None
    assert not refused.new
    assert len(book.pending()) == MAX_PENDING
    assert book.request("telegram", "0", "0", "x").code is not None  # a waiting one still is


def test_a_code_expires_after_an_hour_and_makes_room(book: PairingBook, clock: Clock) -> None:
    old = book.request("telegram", "7", "7", "eve").code
    assert old is not None
    for i in range(1, MAX_PENDING):
        book.request("telegram", str(i), str(i), "x")
    clock.advance(CODE_TTL_SECONDS + 1)
    assert book.pending() == []
    assert book.approve(old.code, "cli") is None
    assert book.paired("telegram") == frozenset()
    fresh = book.request("telegram", "7", "7", "eve")
    assert fresh.new
    assert fresh.code is not None
    assert fresh.code.code != old.code


def test_approving_a_code_pairs_its_sender_and_it_can_be_revoked(book: PairingBook) -> None:
    code = book.request("telegram", "7", "70", "eve").code
    assert code is not None
    found = book.approve(f" {code.code[:4].lower()}-{code.code[4:]} ", "telegram:1")
    assert found is not None
    assert (found.gateway, found.sender_id, found.chat_id) == ("telegram", "7", "70")
    assert book.paired("telegram") == {"7"}
    assert book.paired("discord") == frozenset()
    assert book.pending() == []
    assert book.approve(code.code, "cli") is None  # a code is used once
    assert book.revoke("telegram", "7")
    assert not book.revoke("telegram", "7")
    assert book.paired("telegram") == frozenset()


def test_pairings_survive_a_reload_and_a_write_by_another_process(tmp_path: Path) -> None:
    server = book_for(tmp_path, "bot")
    code = server.request("telegram", "7", "7", "eve").code
    assert code is not None
    assert server.paired("telegram") == frozenset()  # cached now
    cli = book_for(tmp_path, "bot")  # the CLI: its own object on the same file
    assert cli.approve(code.code, "cli") is not None
    assert server.paired("telegram") == {"7"}  # the server sees it at the next message
    reloaded = book_for(tmp_path, "bot")
    assert [p.sender_id for p in reloaded.paired_senders()] == ["7"]
    assert reloaded.paired_senders()[0].approved_by == "cli"
    text = (tmp_path / "pairing" / "bot.yaml").read_text()
    assert text.startswith("# Pairing of agent 'bot'")
    assert yaml.safe_load(text)["paired"][0]["sender_id"] == "7"


def test_concurrent_requests_lose_no_code(tmp_path: Path) -> None:
    books = [book_for(tmp_path, "bot") for _ in range(MAX_PENDING)]
    threads = [
        threading.Thread(target=b.request, args=("telegram", str(i), str(i), "x"))
        for i, b in enumerate(books)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.sender_id for p in books[0].pending()) == [str(i) for i in range(MAX_PENDING)]


def test_an_unreadable_file_is_an_error_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    book = book_for(tmp_path, "bot")
    book.path.parent.mkdir(parents=True)
    book.path.write_text("paired: [1, 2]\n")
    with pytest.raises(PairingFileError) as caught:
        book.paired("telegram")
    message = str(caught.value)
    assert str(book.path) in message
    assert "fix or delete it" in message


def test_an_id_a_person_wrote_as_a_number_is_read_as_text(tmp_path: Path) -> None:
    book = book_for(tmp_path, "bot")
    book.path.parent.mkdir(parents=True)
    book.path.write_text(
        "paired:\n- {gateway: telegram, sender_id: 7, name: eve,"
        " paired_at: '2026-12-05T10:00:00Z', approved_by: cli}\n"
    )
    assert book.paired("telegram") == {"7"}


def test_a_pairing_time_that_is_not_a_time_is_an_error_naming_the_file(tmp_path: Path) -> None:
    book = book_for(tmp_path, "bot")
    book.path.parent.mkdir(parents=True)
    book.path.write_text(
        "paired:\n- {gateway: telegram, sender_id: 7, name: eve, paired_at: x, approved_by: cli}\n"
    )
    with pytest.raises(PairingFileError, match=r"bot\.yaml"):
        book.paired("telegram")


def test_a_pairing_lets_in_only_what_was_written_after_it(book: PairingBook, clock: Clock) -> None:
    code = book.request("telegram", "7", "70", "eve").code
    assert code is not None
    clock.advance(10.4)
    approved_at = clock.now
    assert book.approve(code.code, "telegram:1") is not None
    assert book.paired("telegram", approved_at - 5) == frozenset()  # written before: a stranger
    assert book.paired("telegram", int(approved_at) - 1) == frozenset()  # the second before
    assert book.paired("telegram", int(approved_at)) == {"7"}  # the approval's own second
    assert book.paired("telegram", approved_at) == {"7"}
    assert book.paired("telegram") == {"7"}


def test_a_pairing_stamped_in_whole_seconds_by_a_person_still_reads(tmp_path: Path) -> None:
    book = book_for(tmp_path / ".duragent", "bot")
    book.path.parent.mkdir(parents=True)
    book.path.write_text(
        "paired:\n- {gateway: telegram, sender_id: '7', name: eve,"
        " paired_at: '2026-12-05T10:00:00Z', approved_by: cli}\n"
    )
    ten = 1_796_464_800.0  # 2026-12-05T10:00:00Z
    assert book.paired("telegram", ten - 1) == frozenset()
    assert book.paired("telegram", ten) == {"7"}
