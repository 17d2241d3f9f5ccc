"""Issue #24 item 1 and the outage half of item 4, as an operator meets them.

The operator's steps, through the public surface only: ``duragent.yaml`` with
``store: {backend: postgres, dsn: ${DATABASE_URL}}``, ``duragent store migrate``,
``duragent store copy``, ``duragent doctor``, ``duragent serve`` and its HTTP API. The
database is the real test PostgreSQL, one throw-away schema per test; an outage is a TCP
relay in front of it that is cut (``postgres_db.Outage``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.acceptance.served import Served, Workspace
from tests.store import postgres_db

SECRET = "s3cret-password-42"


def url(dsn: str, *, password: str | None = None) -> str:
    """``dsn`` as the ``postgresql://`` URL an operator exports as DATABASE_URL."""
    parts = postgres_db.psycopg.conninfo.conninfo_to_dict(dsn)
    user = str(parts.get("user") or "postgres")
    auth = f"{user}:{password}" if password else user
    return f"postgresql://{auth}@{parts.get('host')}:{parts.get('port')}/{parts.get('dbname')}"


def postgres_yaml(schema: str) -> str:
    return f"store:\n  backend: postgres\n  dsn: ${{DATABASE_URL}}\n  schema: {schema}\n"


@pytest.fixture
def schema() -> object:
    with postgres_db.fresh_schema() as name:
        yield name


def make_workspace(root: Path, dsn: str = postgres_db.DSN) -> Workspace:
    ws = Workspace(root, env={"DATABASE_URL": url(dsn)})
    ws.agent(
        spec_extra="  tools:\n    - type: builtin\n      name: bash\n",
        policy="mode: dangerous\n",
    )
    return ws


def chat(served: Served, sessions: int = 3) -> dict[str, list[dict[str, object]]]:
    """A few sessions with plain turns and a tool call; every history as the API shows it."""
    ids = []
    for n in range(sessions):
        sid = served.new_session()
        assert served.say(sid, f"hello {n}").status_code == 200
        assert served.say(sid, f'run\n!call bash {{"command": "echo tool-{n}"}}').status_code == 200
        ids.append(sid)
    return {sid: served.history(sid) for sid in ids}


@pytest.mark.slow  # ~7 s; the default suite has tests/store/postgres/test_copy.py
def test_store_copy_moves_every_session_and_the_api_shows_the_same_histories(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    with ws.serve() as served:  # on files, the default
        before = chat(served)
    assert (ws.root / ".duragent" / "sessions").is_dir()

    ws.config(postgres_yaml(schema))
    migrated = ws.cli("store", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert f"schema {schema}" in migrated.stdout
    again = ws.cli("store", "migrate")
    assert again.returncode == 0
    assert "up to date" in again.stdout

    copied = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert copied.returncode == 0, copied.stderr
    assert "copied 3 sessions, 0 already there" in copied.stdout
    rerun = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert rerun.returncode == 0, rerun.stderr
    assert "copied 0 sessions, 3 already there" in rerun.stdout

    with ws.serve() as served:
        after = {sid: served.history(sid) for sid in before}
        listed = {s["session_id"] for s in served.http.get("/api/v1/sessions").json()["sessions"]}
        sid = next(iter(before))
        assert served.say(sid, "still here?").status_code == 200  # the conversation goes on
        longer = served.history(sid)
    assert after == before
    assert listed == set(before)
    assert longer[: len(before[sid])] == before[sid]

    # and back: a fresh workspace on files gets the same histories
    back = make_workspace(tmp_path / "back")
    back.config(postgres_yaml(schema))
    home = back.cli("store", "copy", "--from", "postgres", "--to", "file")
    assert home.returncode == 0, home.stderr
    back.config("")
    with back.serve() as served:
        assert served.history(sid) == longer
        assert {s: served.history(s) for s in before if s != sid} == {
            s: h for s, h in before.items() if s != sid
        }


def test_store_copy_names_the_stores_it_knows_when_given_another(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    unknown = ws.cli("store", "copy", "--from", "file", "--to", "mysql")
    assert unknown.returncode == 2
    assert "mysql" in unknown.stderr
    assert "file" in unknown.stderr
    assert "postgres" in unknown.stderr
    same = ws.cli("store", "copy", "--from", "file", "--to", "file")
    assert same.returncode == 1
    assert "same store" in same.stderr


def test_store_copy_without_a_dsn_says_where_to_put_one(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")  # duragent.yaml on files, no store section
    answer = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert answer.returncode == 1
    assert "store.dsn" in answer.stderr
    assert "--dsn" in answer.stderr


def test_a_dsn_that_is_not_one_stops_serve_naming_the_field_and_the_fix(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    ws.env["DATABASE_URL"] = "not a dsn"
    ws.config(postgres_yaml("public"))
    answer = ws.cli("serve", "--port", "0", timeout=120)
    assert answer.returncode == 1
    assert "store.dsn" in answer.stderr
    assert "postgresql://user:password@host:5432/dbname" in answer.stderr
    doctor = ws.cli("doctor")
    assert doctor.returncode == 1
    assert "store.dsn is not a PostgreSQL connection string" in doctor.stdout
    unset = make_workspace(tmp_path / "unset")
    del unset.env["DATABASE_URL"]
    unset.config(postgres_yaml("public"))
    missing = unset.cli("serve", "--port", "0", timeout=120)
    assert missing.returncode == 1
    assert "DATABASE_URL is not set" in missing.stderr
    assert "duragent.yaml" in missing.stderr


def test_a_database_that_is_down_at_start_is_one_error_without_the_password(
    tmp_path: Path, schema: str
) -> None:
    outage = postgres_db.Outage()
    outage.down()
    ws = make_workspace(tmp_path / "ws")
    ws.env["DATABASE_URL"] = url(outage.dsn, password=SECRET)
    ws.config(postgres_yaml(schema))
    began = time.monotonic()
    answer = ws.cli("serve", "--port", "0", timeout=60)
    assert answer.returncode == 1
    assert time.monotonic() - began < 20
    error = [line for line in answer.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1, answer.stderr
    assert f"127.0.0.1:{outage.port}/" in error[0]
    assert "refused" in error[0].lower()
    assert "Fix: check store.dsn in duragent.yaml" in error[0]
    assert SECRET not in answer.stderr
    doctor = ws.cli("doctor")
    assert doctor.returncode == 1
    assert "fix: check store.dsn in duragent.yaml" in doctor.stdout
    assert "Fix:" not in doctor.stdout  # said once, on its own line
    assert SECRET not in doctor.stdout + doctor.stderr


@pytest.mark.slow  # ~5 s; the default suite has tests/store/postgres/test_schema.py
def test_a_schema_newer_than_this_duragent_is_refused_everywhere(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    ws.config(postgres_yaml(schema))
    assert ws.cli("store", "migrate").returncode == 0
    doctor = ws.cli("doctor")
    assert f"schema {schema} reachable, schema version" in doctor.stdout
    assert "[clock]" in doctor.stdout
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {schema}.schema_version (version, name) VALUES (999, 'x')")
    for args in (("serve", "--port", "0"), ("store", "migrate")):
        answer = ws.cli(*args, timeout=120)
        assert answer.returncode == 1, args
        assert "version 999" in answer.stderr
        assert "upgrade duragent" in answer.stderr
    doctor = ws.cli("doctor")
    assert doctor.returncode == 1
    assert "newer than this duragent" in doctor.stdout


@pytest.mark.slow  # ~5 s; the default suite has tests/gateways/http/test_database_outage.py
def test_losing_the_database_gives_clear_503s_and_recovers_by_itself(
    tmp_path: Path, schema: str
) -> None:
    outage = postgres_db.Outage()
    ws = make_workspace(tmp_path / "ws")
    ws.env["DATABASE_URL"] = url(outage.dsn, password=SECRET)  # trust auth: never asked for
    ws.config(postgres_yaml(schema))
    bodies: list[str] = []
    with ws.serve() as served:
        sid = served.new_session()
        assert served.say(sid, "before").status_code == 200
        outage.down()

        answer = served.say(sid, "during")
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert "Retry-After" in answer.headers
        problem = answer.json()
        bodies.append(answer.text)
        assert problem["storage"] == "database"
        assert "reconnects by itself" in problem["detail"]

        created = served.http.post("/api/v1/sessions", json={"agent": "assistant"})
        assert created.status_code == 503
        assert created.json()["storage"] == "database"
        assert "creating session" in created.json()["detail"]  # not its clean-up

        deadline = time.monotonic() + 120
        ready = served.http.get("/readyz")
        while ready.status_code == 200 and time.monotonic() < deadline:
            ready = served.http.get("/readyz")
        assert ready.status_code == 503
        declared = served.http.get("/openapi.json").json()["paths"]["/readyz"]["get"]
        assert ready.headers["content-type"] in declared["responses"]["503"]["content"]
        body = ready.json()
        bodies.append(ready.text)
        assert body["storage"]["writable"] is False
        assert "database" in body["detail"]

        outage.up()
        deadline = time.monotonic() + 120
        while served.http.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "not ready again after the database returned"
            time.sleep(0.2)
        assert served.say(sid, "after").status_code == 200
        said = [m["content"] for m in served.history(sid) if m["role"] == "user"]
    assert said == ["before", "after"]
    assert SECRET not in "".join(bodies) + served.log.read_text()


def test_store_copy_tells_in_words_what_it_skipped_in_a_damaged_log(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    with ws.serve() as served:
        sid = served.new_session()
        assert served.say(sid, "hello").status_code == 200
        kept = served.history(sid)
    log = ws.root / ".duragent" / "sessions" / sid / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([lines[0], '{"seq": not json\n', *lines[1:]]))
    ws.config(postgres_yaml(schema))
    copied = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert copied.returncode == 0, copied.stderr
    assert "copied 1 sessions" in copied.stdout
    assert f"warning: session {sid}: the source log had skipped lines (1 malformed line)" in (
        copied.stderr
    )
    assert "ReadReport" not in copied.stdout + copied.stderr
    with ws.serve() as served:
        assert served.history(sid) == kept


def test_store_copy_run_again_after_an_interruption_finishes_the_half_copied_sessions(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    with ws.serve() as served:
        before = chat(served)
    ws.config(postgres_yaml(schema))
    assert ws.cli("store", "copy", "--from", "file", "--to", "postgres").returncode == 0
    # What a SIGKILL during the copy leaves (the snapshot is written last): one session with
    # its first events only, one with its row only.
    half, row_only, _whole = sorted(before)
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        for sid, keep in ((half, 3), (row_only, 0)):
            key = conn.execute(
                "SELECT session_key FROM sessions WHERE session_id = %s", (sid,)
            ).fetchone()
            assert key is not None
            conn.execute("DELETE FROM snapshots WHERE session_key = %s", key)
            conn.execute("DELETE FROM events WHERE session_key = %s AND seq > %s", (key[0], keep))
    again = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "copied 2 sessions, 1 already there" in again.stdout
    assert "interrupted copy" in again.stdout
    with ws.serve() as served:
        assert {sid: served.history(sid) for sid in before} == before


def test_store_copy_never_overwrites_a_session_that_went_on_in_the_target(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    with ws.serve() as served:
        before = chat(served, sessions=1)
    ws.config(postgres_yaml(schema))
    assert ws.cli("store", "copy", "--from", "file", "--to", "postgres").returncode == 0
    sid = next(iter(before))
    with ws.serve() as served:  # the conversation goes on in PostgreSQL
        assert served.say(sid, "said in postgres").status_code == 200
        kept = served.history(sid)
    again = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert again.returncode == 1
    assert f"error: session {sid} exists in the target with another history" in again.stderr
    with ws.serve() as served:
        assert served.history(sid) == kept


def test_store_copy_after_an_interruption_copies_each_schedule_run_once(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    with ws.serve() as served:
        schedule_id = served.ticking_schedule()
        time.sleep(2.5)
        assert served.http.delete(f"/api/v1/schedules/{schedule_id}").status_code in (200, 204)
        runs = served.http.get(f"/api/v1/schedules/{schedule_id}").json()["runs"]
    assert runs
    ws.config(postgres_yaml(schema))
    assert ws.cli("store", "copy", "--from", "file", "--to", "postgres").returncode == 0
    # a SIGKILL between a schedule's runs and the schedule itself (runs are copied first)
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {schema}.schedules WHERE schedule_id = %s", (schedule_id,))
    again = ws.cli("store", "copy", "--from", "file", "--to", "postgres")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "copied 1 schedules" in again.stdout
    with ws.serve() as served:
        assert served.http.get(f"/api/v1/schedules/{schedule_id}").json()["runs"] == runs


def test_an_advertise_url_that_is_no_url_is_refused_naming_the_field(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    ws.config(postgres_yaml("public") + "  advertise_url: 10.0.0.5:8080\n")
    answer = ws.cli("serve", "--port", "0", timeout=120)
    assert answer.returncode == 1
    assert "store.advertise_url" in answer.stderr
    assert "http(s) URL such as http://10.0.0.5:8080" in answer.stderr
    assert "duragent.yaml" in answer.stderr


def test_a_node_listening_on_every_address_without_advertise_url_is_warned(
    tmp_path: Path, schema: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    ws.config(
        postgres_yaml(schema) + "server:\n  host: 0.0.0.0\n  api_token: a-token-of-the-test\n"
    )
    doctor = ws.cli("doctor")
    assert "server.host is 0.0.0.0 and store.advertise_url is unset" in doctor.stdout
    assert "fix: set store.advertise_url" in doctor.stdout
    with ws.serve() as served:
        pass
    assert "set store.advertise_url in" in served.log.read_text()
    ws.config(
        postgres_yaml(schema)
        + "  advertise_url: http://10.0.0.5:8080\n"
        + "server:\n  host: 0.0.0.0\n  api_token: a-token-of-the-test\n"
    )
    assert "advertise_url is unset" not in ws.cli("doctor").stdout
