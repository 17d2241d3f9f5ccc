"""A background job file the registry cannot use is set aside, never fatal (issue 34).

A ``.meta.json`` put on disk directly (corrupt, out of range, naming another file) used to be
skipped silently, or stopped the whole processes service at start (a NUL in a path made
recovery raise), so no job of any chat was listed again. Now each one is checked when read
and written, a bad one is moved to ``processes/_quarantine/`` with its reason and reported
(``skipped``, ``/readyz``), and every other job keeps working, also after a restart.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from duragent.core.caller import OPERATOR
from duragent.tools.processes.meta import reach_of
from tests.gateways.http.api_fixtures import served
from tests.tools.processes.helpers import rig

GOOD = "01good"


def job(handle: str, **fields: Any) -> dict[str, Any]:
    """A job file as the server writes it (an ended job not yet reported), with ``fields``."""
    return {
        "handle": handle,
        "command": "echo hi",
        "session_id": "s1",
        "agent": "bot",
        "log_path": f"/nowhere/{handle}.log",
        "spawned_at": "2026-11-24T08:00:00Z",
        "timeout_seconds": 1800,
        "status": {"state": "completed", "exit_code": 0},
        "completed_at": "2026-11-24T08:01:00Z",
        "notified": False,
        "backend": "local",
    } | fields


BAD: dict[str, str | dict[str, Any]] = {
    "01notjson": '{"handle": "01notjson", ',
    "01pid": job("01pid", pid=10**30, status={"state": "running"}),
    "01timeout": job("01timeout", timeout_seconds=-5),
    "01exit": job("01exit", status={"state": "failed", "exit_code": 10**40}),
    "01handle": job("../../agents/bot/agent"),
    "01log": job("01log", log_path="/work/agents/bot/agent.yaml"),
    "01nul": job(
        "01nul",
        log_path="/tmp/a\x00/01nul.log",
        status={"state": "running"},
        tmux_session="duragent-01nul",
    ),
    "01year": job("01year", spawned_at="0001-01-01T00:00:00+05:00"),
    "01type": job("01type", gateway=["telegram"]),
}


def put(directory: Path, handle: str, doc: str | dict[str, Any]) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (directory / f"{handle}.meta.json").write_text(text)


def lay_out(root: Path) -> Path:
    directory = root / ".duragent" / "processes"
    directory.mkdir(parents=True)
    recently = datetime.now(UTC).isoformat()  # not forgotten (30 min) before the restart
    put(directory, GOOD, job(GOOD, spawned_at=recently, completed_at=recently))
    for handle, doc in BAD.items():
        put(directory, handle, doc)
    return directory


async def test_bad_job_files_are_moved_aside_and_every_other_job_works_after_restarts(
    tmp_path: Path,
) -> None:
    directory = lay_out(tmp_path)
    aside = directory / "_quarantine"
    for start in range(2):  # the second start finds only good files, and still reports the bad
        async with rig(tmp_path) as r:
            listed = [m.handle for m in r.registry.listing(reach_of("bot", OPERATOR))]
            assert GOOD in listed
            assert not set(listed) & set(BAD)
            skipped = r.registry.skipped()
            assert sorted(Path(s["moved_to"]).name for s in skipped) == sorted(
                f"{h}.meta.json" for h in BAD
            )
            reasons = " ".join(s["reason"] for s in skipped)
            for field in ("'pid'", "'timeout_seconds'", "'status.exit_code'", "'handle'",
                          "'log_path'", "'spawned_at'", "'gateway'", "not valid JSON"):  # fmt: skip
                assert field in reasons
            if start == 0:
                message = await r.told.wait_ended()  # the good job is still reported
                assert f"Handle: {GOOD}" in message
            new = await r.spawn("echo still works")
            assert f"Handle: {new}" in await r.told.wait_ended(count=2 - start)
        assert not any((directory / f"{h}.meta.json").exists() for h in BAD)
        assert sorted(p.name for p in aside.glob("*.meta.json")) == sorted(
            f"{h}.meta.json" for h in BAD
        )
        reason = (aside / "01pid.meta.json.reason.txt").read_text()
        assert "01pid.meta.json: field 'pid'" in reason
    assert (tmp_path / ".duragent" / "agents").exists() is False  # nothing written elsewhere


async def test_readyz_lists_the_job_files_set_aside(tmp_path: Path) -> None:
    directory = lay_out(tmp_path)
    async with served(tmp_path) as s:
        ready = await s.client.get("/readyz")
        assert "services" not in ready.json(), ready.text  # nothing down: reported only
        jobs = ready.json()["skipped_records"]["processes"]
        assert sorted(r["moved_to"] for r in jobs) == sorted(
            str(directory / "_quarantine" / f"{h}.meta.json") for h in BAD
        )
        assert all(r["reason"] for r in jobs)
