"""Policy files: three tiers merged, errors a person can fix, and the "allow always" write-back."""

from __future__ import annotations

import os
import stat
import textwrap
import threading
import time
from pathlib import Path

import pytest

from duragent.cli.templates import AGENT_POLICY, WORKSPACE_POLICY
from duragent.errors import ConfigError, StorageError
from duragent.tools.policy import Decision, Notify, NotifyTarget, Policy
from duragent.tools.policy_files import PolicyError, load_policy, save_allow_always
from tests.store.failing_ops import FailingFileOps


@pytest.fixture
def workspace_file(tmp_path: Path) -> Path:
    folder = tmp_path / ".duragent"
    folder.mkdir()
    return folder / "policy.yaml"


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / ".duragent" / "agents" / "assistant"
    folder.mkdir(parents=True)
    return folder


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# --- loading ---------------------------------------------------------------------------------


def test_no_files_means_the_reference_default(workspace_file: Path, agent_dir: Path) -> None:
    assert load_policy(workspace_file, agent_dir) == Policy()


def test_three_tiers_merge_in_order(workspace_file: Path, agent_dir: Path) -> None:
    write(
        workspace_file,
        """\
        apiVersion: duragent/v1alpha1
        kind: Policy
        mode: restrict
        deny: ["bash:rm -rf /*", "bash:sudo *"]
        """,
    )
    write(
        agent_dir / "policy.yaml",
        """\
        kind: Policy
        mode: ask
        allow:
          - "bash:ls *"
          - "bash:date"
        """,
    )
    write(
        agent_dir / "policy.local.yaml",
        """\
        deny:
          - "bash:sudo *"
          - "bash:curl *"
        allow:
          - "bash:date"
          - "bash:git status"
        """,
    )

    policy = load_policy(workspace_file, agent_dir)

    assert policy == Policy(
        mode="ask",
        allow=("bash:ls *", "bash:date", "bash:git status"),
        deny=("bash:rm -rf /*", "bash:sudo *", "bash:curl *"),
    )


@pytest.mark.parametrize(
    ("workspace", "agent", "local", "expected"),
    [
        ("restrict", None, None, "restrict"),
        ("restrict", "ask", None, "ask"),
        ("restrict", "ask", "dangerous", "dangerous"),
        (None, None, "ask", "ask"),
        ("ask", "~", None, "ask"),
    ],
    ids=["workspace only", "agent overrides", "local overrides", "local only", "null is unset"],
)
def test_mode_comes_from_the_most_specific_tier(
    workspace_file: Path,
    agent_dir: Path,
    workspace: str | None,
    agent: str | None,
    local: str | None,
    expected: str,
) -> None:
    for path, mode in (
        (workspace_file, workspace),
        (agent_dir / "policy.yaml", agent),
        (agent_dir / "policy.local.yaml", local),
    ):
        if mode is not None:
            write(path, f"kind: Policy\nmode: {mode}\n")
    assert load_policy(workspace_file, agent_dir).mode == expected


@pytest.mark.parametrize(
    "text",
    ["", "# only a comment\n", "deny:\nallow:\nmode:\n", "kind: Policy\nnotify:\n"],
    ids=["empty", "comment only", "null lists", "null notify"],
)
def test_empty_parts_are_fine(workspace_file: Path, agent_dir: Path, text: str) -> None:
    write(agent_dir / "policy.yaml", text)
    assert load_policy(workspace_file, agent_dir) == Policy()


def test_notify_is_parsed_into_the_policy(workspace_file: Path, agent_dir: Path) -> None:
    write(
        agent_dir / "policy.yaml",
        """\
        mode: ask
        notify:
          enabled: true
          patterns: ["bash:git push*"]
          deliveries:
            - type: log
            - type: webhook
              url: https://example.invalid/hook
        """,
    )
    assert load_policy(workspace_file, agent_dir) == Policy(
        mode="ask",
        notify=Notify(
            enabled=True,
            patterns=("bash:git push*",),
            deliveries=(
                NotifyTarget("log"),
                NotifyTarget("webhook", "https://example.invalid/hook"),
            ),
        ),
    )


def test_the_scaffolded_files_load_and_behave(workspace_file: Path, agent_dir: Path) -> None:
    write(workspace_file, WORKSPACE_POLICY)
    write(agent_dir / "policy.yaml", AGENT_POLICY)

    policy = load_policy(workspace_file, agent_dir)

    assert policy.mode == "ask"
    assert policy.decide("bash", "ls -la").decision is Decision.ALLOW
    assert policy.decide("bash", "date").decision is Decision.ALLOW
    assert policy.decide("bash", "ls; sudo reboot").decision is Decision.DENY
    assert policy.decide("bash", "rm -rf /").decision is Decision.DENY
    assert policy.decide("bash", "curl x").decision is Decision.ASK


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        (
            "mode: ask\ndeny: [\n",
            3,
            None,
            "YAML syntax error",
        ),
        (
            "kind: Policy\nmode: yolo\n",
            2,
            "mode",
            "mode: invalid value (got 'yolo'; allowed: dangerous, ask, restrict)",
        ),
        (
            "mode: ASK\n",
            1,
            "mode",
            "allowed: dangerous, ask, restrict",
        ),
        (
            "kind: Policy\ndeny: 'bash:rm *'\n",
            2,
            "deny",
            "deny: must be a list of patterns (got 'bash:rm *')",
        ),
        (
            "allow:\n  bash: ls\n",
            1,
            "allow",
            "allow: must be a list of patterns (got 'dict')",
        ),
        (
            'allow:\n  - "bash:ls *"\n  - bash: date\n',
            3,
            "allow[1]",
            "allow[1]: a pattern must be a non-empty string (got {'bash': 'date'})",
        ),
        (
            "deny:\n  - 42\n",
            2,
            "deny[0]",
            "deny[0]: a pattern must be a non-empty string (got 42)",
        ),
        (
            'deny:\n  - ""\n',
            2,
            "deny[0]",
            "a pattern must be a non-empty string (got '')",
        ),
        (
            "kind: Agent\n",
            1,
            "kind",
            "kind: invalid value (got 'Agent'; allowed: Policy)",
        ),
        (
            "apiVersion: duragent/v2\n",
            1,
            "apiVersion",
            "allowed: duragent/v1alpha1",
        ),
        (
            "notify: yes please\n",
            1,
            "notify",
            "notify: must be a mapping of keys to values",
        ),
        (
            "- bash:ls *\n",
            1,
            None,
            "a policy file must be a YAML mapping (got 'list')",
        ),
    ],
    ids=[
        "bad yaml",
        "bad mode",
        "mode is case-sensitive",
        "deny is a string",
        "allow is a mapping",
        "unquoted colon-space item",
        "number item",
        "empty item",
        "wrong kind",
        "wrong apiVersion",
        "notify not a mapping",
        "top level list",
    ],
)
def test_malformed_files_raise_policy_error_naming_file_line_and_field(
    workspace_file: Path,
    agent_dir: Path,
    text: str,
    line: int,
    field: str | None,
    message: str,
) -> None:
    path = write(agent_dir / "policy.yaml", text)

    with pytest.raises(PolicyError) as info:
        load_policy(workspace_file, agent_dir)

    err = info.value
    assert isinstance(err, ConfigError)
    assert err.file == path
    assert err.line == line
    assert err.field == field
    assert str(err).startswith(f"{path}:{line}: ")
    assert message in str(err)


def test_a_list_error_says_how_to_fix_it(workspace_file: Path, agent_dir: Path) -> None:
    write(agent_dir / "policy.yaml", "allow: bash:ls\n")
    with pytest.raises(PolicyError, match=r"Fix: write one quoted pattern per line under"):
        load_policy(workspace_file, agent_dir)


def test_an_error_in_the_workspace_tier_names_that_file(
    workspace_file: Path, agent_dir: Path
) -> None:
    write(workspace_file, "mode: sometimes\n")
    with pytest.raises(PolicyError) as info:
        load_policy(workspace_file, agent_dir)
    assert info.value.file == workspace_file


def test_invalid_utf8_is_a_policy_error(workspace_file: Path, agent_dir: Path) -> None:
    (agent_dir / "policy.yaml").write_bytes(b"mode: ask\n# \xff\n")
    with pytest.raises(PolicyError, match="not valid UTF-8"):
        load_policy(workspace_file, agent_dir)


# --- allow always --------------------------------------------------------------------------


def local(agent_dir: Path) -> Path:
    return agent_dir / "policy.local.yaml"


def test_allow_always_creates_the_local_file(workspace_file: Path, agent_dir: Path) -> None:
    pattern = save_allow_always(agent_dir, "bash", "git push")

    assert pattern == "bash:git push"
    assert local(agent_dir).read_text(encoding="utf-8") == (
        'apiVersion: duragent/v1alpha1\nkind: Policy\nallow:\n  - "bash:git push"\n'
    )
    assert load_policy(workspace_file, agent_dir).allow == ("bash:git push",)


@pytest.mark.parametrize("fault", ["write", "fsync", "rename"])
def test_a_disk_fault_in_allow_always_keeps_the_file_and_is_a_storage_error(
    workspace_file: Path, agent_dir: Path, fault: str
) -> None:
    save_allow_always(agent_dir, "bash", "git push")
    before = local(agent_dir).read_bytes()
    ops = FailingFileOps()
    ops.failing, ops.fail_fsync, ops.fail_replace = (
        fault == "write",
        fault == "fsync",
        fault == "rename",
    )

    with pytest.raises(StorageError, match=r"policy\.local\.yaml"):
        save_allow_always(agent_dir, "bash", "git pull", ops)

    assert local(agent_dir).read_bytes() == before
    assert sorted(p.name for p in agent_dir.iterdir()) == ["policy.local.yaml"]


def test_allow_always_keeps_comments_quotes_order_and_mode(
    workspace_file: Path, agent_dir: Path
) -> None:
    original = textwrap.dedent(
        """\
        # Approved by people. Keep this comment.
        kind: Policy
        apiVersion: duragent/v1alpha1
        mode: ask   # the agent asks
        allow:
          - 'bash:ls *'    # single quotes stay single
          - "bash:date"
        deny:
          - bash:sudo *
        """
    )
    write(local(agent_dir), original)

    save_allow_always(agent_dir, "bash", "git status")

    assert local(agent_dir).read_text(encoding="utf-8") == original.replace(
        '  - "bash:date"\n', '  - "bash:date"\n  - "bash:git status"\n'
    )


def test_allow_always_keeps_the_files_list_indentation(agent_dir: Path) -> None:
    write(local(agent_dir), "# mine\nallow:\n- 'bash:ls *'\n")
    save_allow_always(agent_dir, "bash", "date")
    assert local(agent_dir).read_text(encoding="utf-8") == (
        "# mine\nallow:\n- 'bash:ls *'\n- \"bash:date\"\n"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: Policy\n", 'kind: Policy\nallow:\n  - "bash:date"\n'),
        ("kind: Policy\nallow: []\n", 'kind: Policy\nallow:\n  - "bash:date"\n'),
        ("kind: Policy\nallow:\n", 'kind: Policy\nallow:\n  - "bash:date"\n'),
        ("", 'apiVersion: duragent/v1alpha1\nkind: Policy\nallow:\n  - "bash:date"\n'),
    ],
    ids=["no allow key", "empty flow list", "null allow", "empty file"],
)
def test_allow_always_adds_the_allow_list(agent_dir: Path, text: str, expected: str) -> None:
    write(local(agent_dir), text)
    save_allow_always(agent_dir, "bash", "date")
    assert local(agent_dir).read_text(encoding="utf-8") == expected


def test_allow_always_never_writes_mode(workspace_file: Path, agent_dir: Path) -> None:
    write(agent_dir / "policy.yaml", "mode: ask\n")
    save_allow_always(agent_dir, "bash", "make test")
    assert "mode" not in local(agent_dir).read_text(encoding="utf-8")
    write(agent_dir / "policy.yaml", "mode: restrict\n")  # a later change of mode still applies
    assert load_policy(workspace_file, agent_dir).mode == "restrict"


def test_allow_always_twice_writes_once(agent_dir: Path) -> None:
    first = save_allow_always(agent_dir, "bash", "date")
    before = local(agent_dir).stat()
    again = save_allow_always(agent_dir, "bash", "  date  ")
    assert first == again == "bash:date"
    after = local(agent_dir).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert local(agent_dir).read_text(encoding="utf-8").count("bash:date") == 1


@pytest.mark.parametrize(
    ("invocation", "pattern", "others"),
    [
        ("ls *.txt", "bash:ls [*].txt", ["ls a.txt", "ls *.txt; rm x", "ls"]),
        ("ls ?", "bash:ls [?]", ["ls a"]),
        ("ls [ab]", "bash:ls [[]ab]", ["ls a", "ls b"]),
        ("echo x > /tmp/out", "bash:echo x > /tmp/out", ["echo y > /tmp/out"]),
        ("cd /srv && make", "bash:cd /srv && make", ["cd /srv", "make", "cd /srv && make all"]),
        ('echo "unbalanced', 'bash:echo "unbalanced', ['echo "unbalanced; rm x']),
        ("printf 'a\\nb'\necho \"q\"", "bash:printf 'a\\nb'\necho \"q\"", ['echo "q"']),
    ],
    ids=["star", "question mark", "bracket", "redirect", "compound", "unbalanced", "newline"],
)
def test_allow_always_allows_exactly_that_command(
    workspace_file: Path, agent_dir: Path, invocation: str, pattern: str, others: list[str]
) -> None:
    write(agent_dir / "policy.yaml", "mode: restrict\n")

    assert save_allow_always(agent_dir, "bash", invocation) == pattern

    policy = load_policy(workspace_file, agent_dir)
    assert policy.allow == (pattern,)
    assert policy.decide("bash", invocation).decision is Decision.ALLOW
    for other in others:
        assert policy.decide("bash", other).decision is Decision.DENY, other


@pytest.mark.parametrize(
    ("kind", "invocation", "pattern"),
    [("builtin", "web:fetch", "builtin:web:fetch"), ("cli", "deploy", "cli:deploy")],
)
def test_allow_always_for_builtins_and_cli_tools(
    workspace_file: Path, agent_dir: Path, kind: str, invocation: str, pattern: str
) -> None:
    write(agent_dir / "policy.yaml", "mode: ask\n")
    assert save_allow_always(agent_dir, kind, invocation) == pattern
    policy = load_policy(workspace_file, agent_dir)
    assert policy.decide(kind, invocation).decision is Decision.ALLOW
    assert policy.decide("bash", invocation).decision is Decision.ASK


def test_allow_always_rejects_an_unknown_tool_type(agent_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown policy type 'mcp'"):
        save_allow_always(agent_dir, "mcp", "x")
    assert not local(agent_dir).exists()


def test_allow_always_keeps_a_long_command_on_one_line(
    workspace_file: Path, agent_dir: Path
) -> None:
    command = "python -c 'print(1)' " + " ".join(f"--flag-{i}=value" for i in range(40))
    save_allow_always(agent_dir, "bash", command)
    assert local(agent_dir).read_text(encoding="utf-8").splitlines()[-1] == f'  - "bash:{command}"'
    assert load_policy(workspace_file, agent_dir).allow == (f"bash:{command}",)


def test_concurrent_approvals_are_all_kept(workspace_file: Path, agent_dir: Path) -> None:
    write(local(agent_dir), "# shared\nallow: []\n")
    commands = [f"make target-{i}" for i in range(24)]
    barrier = threading.Barrier(len(commands))
    errors: list[BaseException] = []

    def approve(command: str) -> None:
        try:
            barrier.wait()
            save_allow_always(agent_dir, "bash", command)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=approve, args=(c,)) for c in commands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    allow = load_policy(workspace_file, agent_dir).allow
    assert sorted(allow) == sorted(f"bash:{c}" for c in commands)
    assert local(agent_dir).read_text(encoding="utf-8").startswith("# shared\n")


def test_the_write_is_atomic_and_keeps_the_file_mode(agent_dir: Path) -> None:
    write(local(agent_dir), "allow: []\n")
    os.chmod(local(agent_dir), 0o600)
    inode = local(agent_dir).stat().st_ino

    save_allow_always(agent_dir, "bash", "date")

    stat_after = local(agent_dir).stat()
    assert stat.S_IMODE(stat_after.st_mode) == 0o600
    assert stat_after.st_ino != inode  # replaced by rename, never rewritten in place
    assert sorted(p.name for p in agent_dir.iterdir()) == ["policy.local.yaml"]


def test_a_new_file_is_world_readable_like_the_others(agent_dir: Path) -> None:
    save_allow_always(agent_dir, "bash", "date")
    assert stat.S_IMODE(local(agent_dir).stat().st_mode) == 0o644


def test_allow_always_refuses_a_file_it_cannot_edit_and_leaves_it_alone(agent_dir: Path) -> None:
    text = "allow: []\nallow: []\n"  # valid to read (PyYAML), not to edit (ruamel)
    write(local(agent_dir), text)
    with pytest.raises(PolicyError, match="cannot edit this YAML") as info:
        save_allow_always(agent_dir, "bash", "date")
    assert info.value.file == local(agent_dir)
    assert local(agent_dir).read_text(encoding="utf-8") == text
    assert sorted(p.name for p in agent_dir.iterdir()) == ["policy.local.yaml"]


# --- reuse between turns ---------------------------------------------------------------------


def test_an_unchanged_policy_is_reused_and_an_edit_is_seen_on_the_next_load(
    workspace_file: Path, agent_dir: Path
) -> None:
    write(workspace_file, "allow:\n  - 'bash:ls *'\n")
    settled = time.time() - 60  # as if written a minute ago (a fresh file is never cached)
    os.utime(workspace_file, (settled, settled))
    first = load_policy(workspace_file, agent_dir)
    assert load_policy(workspace_file, agent_dir) is first  # not parsed again
    write(workspace_file, "allow:\n  - 'bash:cd *'\n")  # same size, new content
    os.utime(workspace_file, (settled, settled + 1))
    assert load_policy(workspace_file, agent_dir).allow == ("bash:cd *",)
    write(agent_dir / "policy.yaml", "mode: restrict\n")  # a tier that did not exist
    assert load_policy(workspace_file, agent_dir).mode == "restrict"


def test_a_policy_broken_after_loading_fails_on_the_next_load(
    workspace_file: Path, agent_dir: Path
) -> None:
    write(workspace_file, "allow: []\n")
    load_policy(workspace_file, agent_dir)
    write(workspace_file, "allow: [unclosed\n")
    with pytest.raises(PolicyError):
        load_policy(workspace_file, agent_dir)
