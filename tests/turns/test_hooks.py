"""Tool hooks (``spec.hooks``) in real turns: guards refuse calls, steering reaches the model.

Each turn runs through the turn runner and a real session store against the scripted model
over HTTP; assertions read the requests the model received and the events on disk.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from duragent.agents.spec import HooksSpec
from duragent.core.messages import Role, ToolCall
from duragent.session import RegistrySettings, SessionRegistry
from duragent.session.state import INTERRUPTED_RESULT
from duragent.store import SessionStore
from duragent.testing import Reply, ToolCallReply
from duragent.turns import Complete
from duragent.turns.hooks import after_tool, effective_hooks, matches
from tests.turns.turn_fixtures import FnTool, harness

CAPTURE_STEER = "Look at the screen before acting."


def hooks_yaml(text: str) -> str:
    """``spec.hooks`` (and anything else at spec level) as the harness's ``model_extra``."""
    return textwrap.indent(textwrap.dedent(text), "  ")


def on_disk(root: Path, sid: str) -> list[dict[str, Any]]:
    log = root / ".duragent" / "sessions" / sid / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


def results(body: dict[str, Any]) -> dict[str, str]:
    """Tool results the model was sent, by call id."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def call(name: str, call_id: str, **arguments: Any) -> ToolCallReply:
    return ToolCallReply(name=name, arguments=arguments, id=call_id)


async def test_an_after_tool_message_reaches_the_model_after_the_result_and_is_recorded(
    tmp_path: Path,
) -> None:
    proc = FnTool("proc", lambda a: "screen: $ _")
    extra = hooks_yaml(
        f"""\
        hooks:
          after_tool:
            - match: "proc:capture"
              message: "{CAPTURE_STEER}"
            - match: "proc:*"
              message: "Second line."
        """
    )
    async with harness(tmp_path, tools=[proc], model_extra=extra) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("proc", "c1", action="capture", handle="p1")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "look")
        logged = on_disk(tmp_path, sid)
    assert isinstance(result, Complete)
    sent = h.server.requests[-1].json["messages"]
    assert sent[-2] == {"role": "tool", "tool_call_id": "c1", "content": "screen: $ _"}
    assert sent[-1] == {"role": "user", "content": f"[steering] {CAPTURE_STEER}\nSecond line."}
    steering = [e for e in logged if e["type"] == "steering"]
    assert [e["content"] for e in steering] == [f"{CAPTURE_STEER}\nSecond line."]


async def test_steering_follows_all_results_of_a_response_and_never_a_failed_call(
    tmp_path: Path,
) -> None:
    def run(args: Any) -> Any:
        from duragent.tools.base import ToolOutcome

        return ToolOutcome(args.get("ok") is True, "out")

    proc = FnTool("proc", run)
    extra = hooks_yaml(
        """\
        hooks:
          after_tool:
            - match: proc
              message: "steer"
        """
    )
    async with harness(tmp_path, tools=[proc], model_extra=extra) as h:
        h.server.enqueue(
            Reply(
                tool_calls=[
                    call("proc", "c1", ok=True),
                    call("proc", "c2", ok=False),
                    call("proc", "c3", ok=True),
                ]
            ),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    sent = h.server.requests[-1].json["messages"]
    assert [m["role"] for m in sent[-5:]] == ["tool", "tool", "tool", "user", "user"]
    assert [m["content"] for m in sent[-2:]] == ["[steering] steer", "[steering] steer"]


UNLESS_CASES = [
    ("true", {"wait": True}, True),
    ("true", {"wait": False}, False),
    ("true", {"wait": 1}, False),  # a JSON value: true is not 1
    ("3", {"n": 3}, True),
    ("3", {"n": 3.0}, False),
    ("3", {"n": "3"}, False),
    ('"fast"', {"mode": "fast"}, True),
    ('"fast"', {"mode": "slow"}, False),
    ("[1, 2]", {"list": [1, 2]}, True),
]


@pytest.mark.parametrize(("value", "arguments", "suppressed"), UNLESS_CASES)
def test_unless_compares_any_yaml_value_with_the_arguments(
    tmp_path: Path, value: str, arguments: dict[str, Any], suppressed: bool
) -> None:
    key = next(iter(arguments))
    spec = HooksSpec.model_validate(
        __import__("yaml").safe_load(
            f'after_tool:\n  - match: "t:run"\n    message: m\n    unless:\n      {key}: {value}\n'
        )
    )
    made = ToolCall(id="c", name="t", arguments=json.dumps({"action": "run", **arguments}))
    assert after_tool(spec, made, True) == (None if suppressed else "m")
    assert after_tool(spec, made, False) is None  # never after a failure


async def test_unless_with_a_bool_suppresses_steering_in_a_turn(tmp_path: Path) -> None:
    job = FnTool("job", lambda a: "started")
    extra = hooks_yaml(
        """\
        hooks:
          after_tool:
            - match: "job:spawn"
              message: "Start a watcher."
              unless:
                wait: true
        """
    )
    async with harness(tmp_path, tools=[job], model_extra=extra) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("job", "c1", action="spawn", wait=True)]),
            Reply(tool_calls=[call("job", "c2", action="spawn", wait=False)]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    second, third = (r.json["messages"] for r in h.server.requests[1:3])
    assert second[-1]["role"] == "tool"  # wait: true → no steering
    assert third[-1] == {"role": "user", "content": "[steering] Start a watcher."}


async def test_depends_on_refuses_until_the_prior_call_with_the_same_argument_was_made(
    tmp_path: Path,
) -> None:
    proc = FnTool("proc", lambda a: f"did {a.get('action')}")
    extra = hooks_yaml(
        """\
        hooks:
          before_tool:
            - match: "proc:send_keys"
              type: depends_on
              prior: "proc:capture"
              match_arg: handle
        """
    )
    async with harness(tmp_path, tools=[proc], model_extra=extra) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("proc", "c1", action="send_keys", handle="p1", keys="ls")]),
            Reply(tool_calls=[call("proc", "c2", action="capture", handle="p2")]),
            Reply(tool_calls=[call("proc", "c3", action="send_keys", handle="p1", keys="ls")]),
            Reply(tool_calls=[call("proc", "c4", action="capture", handle="p1")]),
            Reply(tool_calls=[call("proc", "c5", action="send_keys", handle="p1", keys="ls")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "type ls")
        logged = on_disk(tmp_path, sid)
    refusal = (
        "Hook guard: this tool requires a prior 'proc:capture' call first. "
        "The 'handle' argument must match."
    )
    seen = results(h.server.requests[-1].json)
    assert seen["c1"] == refusal
    assert seen["c3"] == refusal  # a capture of another handle does not count
    assert seen["c5"] == "did send_keys"
    assert [c["action"] for c in proc.calls] == ["capture", "capture", "send_keys"]
    recorded = {e["call_id"]: e["result"] for e in logged if e["type"] == "tool_result"}
    assert recorded["c1"] == {"success": False, "content": refusal}  # durable like any result


async def test_skip_duplicate_refuses_an_identical_call_whose_result_the_model_has(
    tmp_path: Path,
) -> None:
    recall = FnTool("notes", lambda a: f"notes for {a.get('days')} days")
    extra = hooks_yaml(
        """\
        hooks:
          before_tool:
            - match: "notes:recall"
              type: skip_duplicate
              match_args: [days]
        """
    )
    async with harness(tmp_path, tools=[recall], model_extra=extra) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("notes", "c1", action="recall", days=7, query="a")]),
            Reply(tool_calls=[call("notes", "c2", action="recall", days=7, query="b")]),
            Reply(tool_calls=[call("notes", "c3", action="recall", days=30)]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "recall")
    seen = results(h.server.requests[-1].json)
    assert seen["c2"] == (
        "Hook guard: duplicate call skipped. An identical 'notes:recall' call with the same "
        "arguments already has a result in this conversation."
    )
    assert seen["c3"] == "notes for 30 days"
    assert [c["days"] for c in recall.calls] == [7, 30]


def test_a_match_pattern_globs_on_tool_and_action() -> None:
    assert matches("proc:*", "proc:capture")
    assert matches("*", "bash")
    assert matches("*:capture", "proc:capture")
    assert matches("p*c:c*e", "proc:capture")
    assert not matches("proc:*", "proc")
    assert not matches("proc", "proc:capture")
    assert not matches("proc:cap", "proc:capture")
    assert not matches("bash.", "bashx")  # only * is special


async def test_a_glob_hook_guards_every_action_of_a_tool(tmp_path: Path) -> None:
    proc = FnTool("proc", lambda a: "ok")
    extra = hooks_yaml(
        """\
        hooks:
          before_tool:
            - match: "proc:*"
              type: depends_on
              prior: "login"
        """
    )
    async with harness(
        tmp_path, tools=[proc, FnTool("login", lambda a: "in")], model_extra=extra
    ) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("proc", "c1", action="list")]),
            Reply(tool_calls=[call("proc", "c2")]),  # no action: "proc" is not "proc:*"
            Reply(tool_calls=[call("login", "c3")]),
            Reply(tool_calls=[call("proc", "c4", action="kill")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    seen = results(h.server.requests[-1].json)
    assert seen["c1"].startswith("Hook guard: this tool requires a prior 'login' call first.")
    assert seen["c2"] == "ok"
    assert seen["c4"] == "ok"


BACKGROUND = """\
tools:
  - type: builtin
    name: background_process
"""


async def test_background_process_gets_the_reference_defaults_and_an_agent_hook_overrides_one(
    tmp_path: Path,
) -> None:
    bg = FnTool("background_process", lambda a: "ok")
    extra = hooks_yaml(BACKGROUND) + hooks_yaml(
        """\
        hooks:
          after_tool:
            - match: "background_process:capture"
              message: "My own capture note."
        """
    )
    async with harness(tmp_path, tools=[bg], model_extra=extra) as h:
        hooks = effective_hooks(h.agent.spec)
        h.server.enqueue(
            Reply(tool_calls=[call("background_process", "c1", action="send_keys", handle="h")]),
            Reply(tool_calls=[call("background_process", "c2", action="capture", handle="h")]),
            Reply(tool_calls=[call("background_process", "c3", action="spawn", command="x")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    assert [hook.match for hook in hooks.after_tool] == [
        "background_process:capture",
        "background_process:spawn",
    ]
    assert hooks.after_tool[0].message == "My own capture note."  # the default's is replaced
    requests = [r.json["messages"] for r in h.server.requests]
    assert requests[1][-1]["content"] == (
        "Hook guard: this tool requires a prior 'background_process:capture' call first. "
        "The 'handle' argument must match."
    )
    assert requests[2][-1] == {"role": "user", "content": "[steering] My own capture note."}
    assert requests[3][-1] == {
        "role": "user",
        "content": "[steering] Remember to start a watcher for this process if you need to "
        "monitor it.",
    }


async def test_a_hook_that_raises_is_skipped_and_the_turn_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from duragent.turns import hooks as hooks_module

    def broken(*args: Any) -> str:
        raise RuntimeError("hook bug")

    monkeypatch.setattr(hooks_module, "_depends_on", broken)
    proc = FnTool("proc", lambda a: "ran")
    extra = hooks_yaml(
        """\
        hooks:
          before_tool:
            - match: proc
              type: depends_on
              prior: other
        """
    )
    async with harness(tmp_path, tools=[proc], model_extra=extra) as h:
        h.server.enqueue(Reply(tool_calls=[call("proc", "c1")]), Reply(text="done"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
    assert isinstance(result, Complete)
    assert results(h.server.requests[-1].json)["c1"] == "ran"
    assert any("before_tool hook 'proc' failed" in r.getMessage() for r in caplog.records)


async def test_steering_survives_a_crash_and_is_in_the_replayed_history(tmp_path: Path) -> None:
    blocked, release = asyncio.Event(), asyncio.Event()

    async def hang(args: Any) -> str:
        blocked.set()
        await release.wait()
        return "late"

    proc, slow = FnTool("proc", lambda a: "screen"), FnTool("slow", hang)
    extra = hooks_yaml(
        f"""\
        hooks:
          after_tool:
            - match: "proc:capture"
              message: "{CAPTURE_STEER}"
        """
    )
    crashed = tmp_path / "crashed"
    async with harness(tmp_path, tools=[proc, slow], model_extra=extra) as h:
        h.server.enqueue(
            Reply(tool_calls=[call("proc", "c1", action="capture")]),
            Reply(tool_calls=[call("slow", "c2")]),
            Reply(text="done"),
        )
        sid = await h.runner.start_session("bot")
        turn = asyncio.create_task(h.runner.run(sid, "go"))
        await blocked.wait()
        # The files as a SIGKILL now would leave them: copied while the second call runs.
        shutil.copytree(tmp_path / ".duragent" / "sessions", crashed)
        release.set()
        await turn
    assert (crashed / sid / "events.jsonl").is_file()
    registry = SessionRegistry(SessionStore(crashed), RegistrySettings(ask_timeout=20))
    await registry.open()
    try:
        window = await registry.handle(sid).messages()
    finally:
        await registry.aclose()
    tail = [(m.role, m.tool_call_id, m.text) for m in window[-5:]]
    assert window[-5].tool_calls[0].id == "c1"
    assert tail[1] == (Role.TOOL, "c1", "screen")
    assert tail[2] == (Role.USER, None, f"[steering] {CAPTURE_STEER}")
    assert window[-2].tool_calls[0].id == "c2"
    assert tail[4] == (Role.TOOL, "c2", INTERRUPTED_RESULT)  # recovery closed the cut call


@pytest.mark.parametrize(
    ("guard", "field", "words"),
    [
        ("{match: t, type: depends_on}", "spec.hooks.before_tool[0]", "never refuses"),
        ("{match: t, type: skip_duplicate}", "spec.hooks.before_tool[0]", "never refuses"),
        (
            "{match: t, type: skip_duplicate, match_args: [a], prior: p}",
            "spec.hooks.before_tool[0].prior",
            "has no effect on a skip_duplicate guard",
        ),
        (
            "{match: t, type: depends_on, prior: p, match_args: [a]}",
            "spec.hooks.before_tool[0].match_args",
            "has no effect on a depends_on guard",
        ),
    ],
)
def test_a_guard_that_cannot_act_is_reported_when_the_agent_loads(
    tmp_path: Path, guard: str, field: str, words: str
) -> None:
    from duragent.agents.loader import load_agent

    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bot\nspec:\n"
        "  model:\n    provider: offline\n    name: echo\n"
        f"  hooks:\n    before_tool:\n      - {guard}\n"
    )
    (warning,) = load_agent(folder).warnings
    assert warning.field == field
    assert words in warning.reason


def test_the_history_api_shows_steering_with_tool_traffic_only() -> None:
    from duragent.core.events import Event
    from duragent.session.history import events_to_messages

    events = [Event.user_message(1, content="go"), Event.steering(2, content="look")]
    assert [m["role"] for m in events_to_messages(events, include_tools=False)] == ["user"]
    shown = events_to_messages(events, include_tools=True)[-1]
    assert (shown["role"], shown["content"], shown["seq"]) == ("steering", "look", 2)
