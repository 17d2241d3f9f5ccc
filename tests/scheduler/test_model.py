"""Schedule files: the reference's format read and written, mistakes named by file and field."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from duragent.errors import ConfigError
from duragent.scheduler.model import (
    At,
    Cron,
    Destination,
    Every,
    MessagePayload,
    Retry,
    TaskPayload,
    parse_schedule,
    schedule_document,
)

REFERENCE_FILE = {
    "id": "sched_01JDEXAMPLE0000000000000000",
    "agent": "helper",
    "created_by_session": "session_01JD",
    "destination": {"gateway": "telegram", "chat_id": "12345"},
    "schedule": {"cron": {"expr": "0 9 * * MON-FRI", "tz": "Europe/Berlin"}},
    "payload": {"task": {"task": "Summarise yesterday's tickets"}},
    "created_at": "2026-11-24T08:00:00.000Z",
    "status": "active",
    "retry": {"max_retries": 2, "initial_delay_ms": 500, "max_delay_ms": 4000},
}


def test_a_reference_schedule_file_reads_into_its_fields() -> None:
    s = parse_schedule(REFERENCE_FILE)
    assert s.timing == Cron("0 9 * * MON-FRI", "Europe/Berlin")
    assert s.payload == TaskPayload("Summarise yesterday's tickets")
    assert s.destination == Destination("telegram", "12345")
    assert s.retry == Retry(2, 500, 4000)
    assert s.created_at == datetime(2026, 11, 24, 8, tzinfo=UTC)


def test_writing_then_reading_gives_the_same_schedule() -> None:
    s = parse_schedule(REFERENCE_FILE)
    assert parse_schedule(schedule_document(s)) == s
    assert schedule_document(s) == REFERENCE_FILE


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        ({"at": {"at": "2026-12-01T09:00:00+01:00"}}, At(datetime(2026, 12, 1, 8, tzinfo=UTC))),
        ({"every": {"every_seconds": 60}}, Every(60)),
        ({"cron": {"expr": "0 0 9 * * 1"}}, Cron("0 0 9 * * 1")),
    ],
)
def test_every_timing_form_of_the_reference_is_read(timing: object, expected: object) -> None:
    doc = {**REFERENCE_FILE, "schedule": timing, "payload": {"message": {"message": "hi"}}}
    s = parse_schedule(doc)
    assert s.timing == expected
    assert s.payload == MessagePayload("hi")


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"schedule": {"cron": {"expr": "0 9 * *"}}}, "schedule.cron.expr", "4 fields"),
        ({"schedule": {"cron": {"expr": "0 25 * * *"}}}, "schedule.cron.expr", "valid cron"),
        ({"schedule": {"cron": {"expr": "0 9 * * *", "tz": "Mars/Olympus"}}},
         "schedule.cron.tz", "IANA"),
        ({"schedule": {"every": {"every_seconds": 0}}}, "schedule.every.every_seconds",
         "allowed: 1 to 315,360,000 seconds"),
        ({"schedule": {"every": {"every_seconds": 10**20}}}, "schedule.every.every_seconds",
         "is out of range (got 100000000000000000000; allowed: 1 to 315,360,000 seconds"),
        ({"schedule": {"every": {"every_seconds": 10**12}}}, "schedule.every.every_seconds",
         "out of range"),
        ({"schedule": {"every": {"every_seconds": 60, "anchor": "0001-01-01T00:00:00Z"}}},
         "schedule.every.anchor", "allowed: from 1970-01-01T00:00:00Z to before 9000"),
        ({"schedule": {"at": {"at": "0001-01-01T00:00:00+05:00"}}}, "schedule.at.at",
         "is out of range (got '0001-01-01T00:00:00+05:00'; allowed: from 1970-01-01"),
        ({"schedule": {"at": {"at": "9999-12-31T23:00:00-05:00"}}}, "schedule.at.at",
         "out of range"),
        ({"schedule": {"at": {"at": "9500-01-01T00:00:00Z"}}}, "schedule.at.at",
         "is out of range (got '9500-01-01T00:00:00Z'; allowed: from 1970"),
        ({"schedule": {"cron": {"expr": "0 0 0 1 1 * 9999"}}}, "schedule.cron.expr",
         "never fires again"),
        ({"created_at": "0001-01-01T00:00:00Z"}, "created_at", "out of range"),
        ({"retry": {"max_delay_ms": 10**20}}, "retry.max_delay_ms", "allowed: 0 to 86,400,000"),
        ({"schedule": {"at": {"at": "tomorrow"}}}, "schedule.at.at", "RFC 3339"),
        ({"schedule": {"at": {"at": "2026-12-01T09:00:00"}}}, "schedule.at.at", "offset"),
        ({"schedule": {"hourly": {}}}, "schedule", "exactly one of at, every, cron"),
        ({"payload": {"message": {"message": ""}}}, "payload.message.message", "non-empty"),
        ({"status": "paused"}, "status", "not a schedule status"),
        ({"retry": {"max_retries": -1}}, "retry.max_retries", "whole number"),
        ({"destination": {"gateway": "telegram"}}, "destination.chat_id", "non-empty"),
    ],
)  # fmt: skip
def test_a_mistake_is_named_by_file_and_field(change: dict, field: str, words: str) -> None:
    file = Path("/w/.duragent/schedules/sched_x.yaml")
    with pytest.raises(ConfigError) as caught:
        parse_schedule({**REFERENCE_FILE, **change}, file=file)
    assert caught.value.field == field
    assert caught.value.file == file
    assert words in str(caught.value)


def test_a_numeric_chat_id_is_read_as_text() -> None:
    s = parse_schedule({**REFERENCE_FILE, "destination": {"gateway": "telegram", "chat_id": 42}})
    assert s.destination == Destination("telegram", "42")
