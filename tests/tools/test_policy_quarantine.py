"""A broken ``policy.local.yaml`` is moved aside, fails closed, and never stops a turn (issue 34).

"Allow always" writes ``policy.local.yaml``; one that does not parse, or has an entry of the
wrong type or an unknown mode, failed every turn of its agent. Now none of its rules apply
(a command only it allowed still needs approval in ``ask`` mode), it is moved to
``<agent>/_quarantine/`` with its reason, listed in ``/readyz`` and by ``doctor``, and the
next "allow always" writes a fresh, valid file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.cli.doctor import run_checks
from duragent.cli.findings import Level
from duragent.testing import Reply, ToolCallReply
from duragent.tools import policy_files
from duragent.tools.policy import Policy
from duragent.tools.policy_files import load_policy, save_allow_always
from duragent.tools.policy_quarantine import local_policies_set_aside
from duragent.tools.policy_tier import read_policy_file
from tests.gateways.http.api_fixtures import served

ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
BASH = "  tools:\n    - type: builtin\n      name: bash\n"
ALLOWS_TOUCH = '\nallow:\n  - "bash:touch *"\n'
BROKEN = {  # each one allows `touch`, and cannot be used as a whole
    "bad yaml": ALLOWS_TOUCH + "deny: [\n",
    "unknown mode": ALLOWS_TOUCH + "mode: sometimes\n",
    "entry of the wrong type": ALLOWS_TOUCH + "deny:\n  - 42\n",
    "notify not a mapping": ALLOWS_TOUCH + "notify: yes\n",
}


@pytest.mark.parametrize("text", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_local_file_applies_none_of_its_rules_and_is_moved_aside(
    tmp_path: Path, text: str
) -> None:
    agent = tmp_path / "agents" / "bot"
    agent.mkdir(parents=True)
    (agent / "policy.yaml").write_text(ASK)
    (agent / "policy.local.yaml").write_text(text)

    policy = load_policy(tmp_path / "policy.yaml", agent)

    assert policy.mode == "ask"
    assert policy.allow == ()
    assert policy.decide("bash", "touch x").decision == "ask"
    assert not (agent / "policy.local.yaml").exists()
    moved = agent / "_quarantine" / "policy.local.yaml"
    assert moved.read_text() == text
    reason = (agent / "_quarantine" / "policy.local.yaml.reason.txt").read_text()
    assert str(agent / "policy.local.yaml") in reason
    [record] = local_policies_set_aside([agent])
    assert record["moved_to"] == str(moved)
    # the next "allow always" starts a new, valid file; the one set aside stays
    assert save_allow_always(agent, "bash", "date") == "bash:date"
    assert read_policy_file(agent / "policy.local.yaml")[0].allow == ("bash:date",)
    assert load_policy(tmp_path / "policy.yaml", agent).allow == ("bash:date",)
    assert moved.read_text() == text


def test_allow_always_on_a_broken_file_moves_it_aside_and_writes_a_fresh_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.local.yaml").write_text(BROKEN["unknown mode"])
    save_allow_always(tmp_path, "bash", "date")
    assert read_policy_file(tmp_path / "policy.local.yaml")[0].allow == ("bash:date",)
    assert (tmp_path / "_quarantine" / "policy.local.yaml").exists()


def test_the_persons_own_policy_file_is_never_moved(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text("mode: sometimes\n")
    with pytest.raises(Exception, match="invalid value"):
        load_policy(tmp_path / "none.yaml", tmp_path)
    assert (tmp_path / "policy.yaml").exists()
    assert local_policies_set_aside([tmp_path]) == []


def bash(command: str, call_id: str) -> Reply:
    return Reply(
        tool_calls=[ToolCallReply(name="bash", arguments={"command": command}, id=call_id)]
    )


async def test_a_server_with_a_broken_local_policy_keeps_answering_and_still_asks(
    tmp_path: Path,
) -> None:
    agent = tmp_path / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True)
    (agent / "policy.local.yaml").write_text(BROKEN["unknown mode"])
    marker = tmp_path / "touched"
    async with served(tmp_path, tools=BASH, policy=ASK) as s:
        ready = (await s.client.get("/readyz")).json()
        [record] = ready["skipped_records"]["policies"]
        assert record["moved_to"] == str(agent / "_quarantine" / "policy.local.yaml")
        assert "mode: invalid value" in record["reason"]

        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(bash(f"touch {marker}", "c1"), Reply(text="touched it"))
        paused = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        assert paused.status_code == 202, paused.text  # waits for approval: not allowed
        assert paused.json()["call_id"] == "c1"
        assert not marker.exists()

        approved = await s.client.post(
            f"/api/v1/sessions/{sid}/approve",
            json={"call_id": "c1", "decision": "allow_always"},
        )
        assert approved.status_code == 200, approved.text
        assert marker.exists()
    fresh = read_policy_file(agent / "policy.local.yaml")[0]
    assert fresh.allow == (f"bash:touch {marker}",)
    found = [f for f in run_checks(tmp_path / "duragent.yaml") if f.check == "policy"]
    moved = [f for f in found if "moved aside by the server" in f.message]
    assert len(moved) == 1
    assert moved[0].level is Level.ERROR
    assert moved[0].fix is not None
    assert "move it back to" in moved[0].fix


async def test_a_local_policy_broken_while_serving_is_moved_aside_on_the_next_turn(
    tmp_path: Path,
) -> None:
    agent = tmp_path / ".duragent" / "agents" / "bot"
    async with served(tmp_path, tools=BASH, policy=ASK) as s:
        (agent / "policy.local.yaml").write_text(BROKEN["bad yaml"])
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(bash("touch x", "c1"))
        paused = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        assert paused.status_code == 202, paused.text  # the turn runs, and asks
        assert paused.json()["call_id"] == "c1"
        ready = (await s.client.get("/readyz")).json()
        assert [r["record"] for r in ready["skipped_records"]["policies"]] == [
            str(agent / "_quarantine" / "policy.local.yaml")
        ]


# --- what makes the policy stricter survives the file being set aside ------------------------

DENIES_RM = 'deny:\n  - "rm *"\n  - 42\nallow:\n  - "bash:touch *"\n'


def restarted(workspace_file: Path, agent: Path) -> Policy:
    """The policy a new process reads: nothing cached, the files as they are now."""
    policy_files._loaded.clear()
    return load_policy(workspace_file, agent)


def test_the_deny_rules_of_a_broken_local_file_keep_denying_also_after_a_restart(
    tmp_path: Path,
) -> None:
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "policy.local.yaml").write_text(DENIES_RM)

    for policy in (load_policy(tmp_path / "policy.yaml", agent), restarted(tmp_path / "x", agent)):
        assert policy.decide("bash", "rm -rf x").decision == "deny"
        assert policy.decide("bash", "touch x").decision == "ask"  # its allow: never
        assert policy.allow == ()
    assert (agent / "_quarantine" / "policy.local.yaml").read_text() == DENIES_RM
    fresh = (agent / "policy.local.yaml").read_text()
    assert "_quarantine/policy.local.yaml" in fresh  # a comment names the copy set aside
    kept = read_policy_file(agent / "policy.local.yaml")[0]
    assert kept.deny == ("rm *",)
    # an entry that could not be read may have been a deny: what was not allowed is asked
    assert kept.mode == "ask"
    [record] = local_policies_set_aside([agent])
    assert "kept" in record["reason"]
    # the next "allow always" adds to that file; the kept rules stay
    save_allow_always(agent, "bash", "date")
    again = read_policy_file(agent / "policy.local.yaml")[0]
    assert (again.deny, again.allow, again.mode) == (("rm *",), ("bash:date",), "ask")
    assert "_quarantine/policy.local.yaml" in (agent / "policy.local.yaml").read_text()


def test_a_broken_local_file_in_restrict_mode_stays_restrict(tmp_path: Path) -> None:
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "policy.yaml").write_text(ASK + "allow:\n  - 'bash:ls *'\n")
    (agent / "policy.local.yaml").write_text("mode: restrict\nallow:\n  - 'bash:touch *'\n  - 7\n")

    for policy in (load_policy(tmp_path / "w.yaml", agent), restarted(tmp_path / "w.yaml", agent)):
        assert policy.mode == "restrict"
        assert policy.decide("bash", "touch x").decision == "deny"
        assert policy.decide("bash", "ls -la").decision == "allow"  # the person's own file
    assert read_policy_file(agent / "policy.local.yaml")[0].mode == "restrict"


def test_a_looser_mode_of_a_broken_local_file_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text("mode: restrict\n")
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "policy.local.yaml").write_text("mode: dangerous\ndeny:\n  - {}\n")

    assert load_policy(tmp_path / "w.yaml", agent).mode == "restrict"
    assert restarted(tmp_path / "w.yaml", agent).mode == "restrict"
    assert not (agent / "policy.local.yaml").exists()  # nothing stricter to keep


@pytest.mark.parametrize("above", ["", "mode: dangerous\n", "mode: ask\n"])
def test_a_local_file_that_is_not_yaml_leaves_every_command_not_allowed_asked(
    tmp_path: Path, above: str
) -> None:
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "policy.yaml").write_text(above + "allow:\n  - 'bash:ls *'\n")
    (agent / "policy.local.yaml").write_text('deny: ["rm *"\nallow: [\n')

    for policy in (load_policy(tmp_path / "w.yaml", agent), restarted(tmp_path / "w.yaml", agent)):
        assert policy.mode == "ask"
        assert policy.decide("bash", "rm -rf x").decision == "ask"
        assert policy.decide("bash", "ls").decision == "allow"
    assert (agent / "_quarantine" / "policy.local.yaml").exists()


def test_a_broken_local_file_that_cannot_be_moved_aside_still_denies(tmp_path: Path) -> None:
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "_quarantine").write_text("a file where the folder would go\n")
    (agent / "policy.local.yaml").write_text(DENIES_RM)

    for policy in (load_policy(tmp_path / "w.yaml", agent), restarted(tmp_path / "w.yaml", agent)):
        assert policy.decide("bash", "rm -rf x").decision == "deny"
        assert policy.decide("bash", "touch x").decision == "ask"
    assert (agent / "policy.local.yaml").read_text() == DENIES_RM  # left as it was


def test_allow_always_on_a_broken_file_keeps_its_deny_rules(tmp_path: Path) -> None:
    agent = tmp_path / "bot"
    agent.mkdir()
    (agent / "policy.local.yaml").write_text(
        'mode: restrict\ndeny:\n  - "bash:git push *"\n  - []\n'
    )
    save_allow_always(agent, "bash", "git push origin")  # the file broke after the turn asked
    policy = load_policy(tmp_path / "w.yaml", agent)
    assert policy.mode == "restrict"
    assert policy.decide("bash", "git push origin").decision == "deny"
