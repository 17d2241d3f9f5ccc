"""Policy notifications: parsed from the three tiers, delivered after a call, never in the way."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.testing import Reply, ToolCallReply
from duragent.tools.bash import BashTool
from duragent.tools.notify import NOTIFIER, Notifier, safe_url
from duragent.tools.policy import Notify, NotifyTarget, Policy
from duragent.tools.policy_files import PolicyError, load_policy
from tests.tools.local_http import serving
from tests.turns.turn_fixtures import harness


class Hook:
    """A webhook receiver: records each JSON body; answers after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.bodies: list[Any] = []
        self.paths: list[str] = []

    def app(self) -> Starlette:
        async def receive(request: Request) -> Response:
            self.paths.append(str(request.url.path) + "?" + request.url.query)
            self.bodies.append(json.loads(await request.body()))
            await asyncio.sleep(self.delay)
            return Response(status_code=204)

        return Starlette(routes=[Route("/{rest:path}", receive, methods=["POST"])])


def policy_text(url: str, patterns: str = "[]") -> str:
    return f"""\
        notify:
          enabled: true
          patterns: {patterns}
          deliveries:
            - type: webhook
              url: {url}
        """


def bash_call(command: str) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": command}, id="c1")])


async def test_a_command_that_ran_is_posted_to_the_webhook(tmp_path: Path) -> None:
    hook = Hook()
    with serving(hook.app()) as port:
        url = f"http://127.0.0.1:{port}/hooks/T1?token=s3cr3t-value"
        async with harness(tmp_path, tools=[BashTool()], policy=policy_text(url)) as h:
            h.server.enqueue(bash_call("echo hi"), Reply(text="done"))
            sid = await h.runner.start_session("bot")
            await h.runner.run(sid, "go")
            await NOTIFIER.drain()
    assert hook.bodies == [
        {
            "event": "command_notification",
            "session_id": sid,
            "agent": "bot",
            "command": "echo hi",
            "success": True,
        }
    ]
    assert hook.paths == ["/hooks/T1?token=s3cr3t-value"]


async def test_a_call_is_notified_once_a_person_approved_it_not_while_it_waits(
    tmp_path: Path,
) -> None:
    hook = Hook()
    with serving(hook.app()) as port:
        text = "mode: ask\nallow: ['bash:echo *']\n" + textwrap.dedent(
            policy_text(f"http://127.0.0.1:{port}/h")
        )
        async with harness(tmp_path, tools=[BashTool()], policy=text) as h:
            h.server.enqueue(bash_call("date +%Y"))
            sid = await h.runner.start_session("bot")
            await h.runner.run(sid, "go")  # pauses for approval: nothing ran yet
            await NOTIFIER.drain()
            assert hook.bodies == []
            h.server.enqueue(Reply(text="done"))
            await h.runner.approve(sid, "c1", "allow_once")
            await NOTIFIER.drain()
    assert [(b["command"], b["success"]) for b in hook.bodies] == [("date +%Y", True)]


async def test_only_calls_matching_the_patterns_are_notified_segments_included(
    tmp_path: Path,
) -> None:
    hook = Hook()
    with serving(hook.app()) as port:
        text = policy_text(f"http://127.0.0.1:{port}/h", '["bash:rm *"]')
        async with harness(tmp_path, tools=[BashTool()], policy=text) as h:
            h.server.enqueue(
                bash_call("echo quiet"),
                bash_call("echo a; rm -f nothing-here; false"),
                Reply(text="done"),
            )
            sid = await h.runner.start_session("bot")
            await h.runner.run(sid, "go")
            await NOTIFIER.drain()
    assert [(b["command"], b["success"]) for b in hook.bodies] == [
        ("echo a; rm -f nothing-here; false", False)
    ]


async def test_a_slow_webhook_never_delays_the_caller_and_its_timeout_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = Hook(delay=1.0)
    notifier = Notifier(timeout=0.3)
    with serving(hook.app()) as port:
        url = f"http://127.0.0.1:{port}/services/T0/B0/XXSECRETXX"
        policy = Policy(notify=Notify(True, (), (NotifyTarget("webhook", url),)))
        notifier.after_call(policy, "bash", "make deploy", session_id="s", agent="a", success=True)
        assert hook.bodies == []  # returned before anything was sent (not timed: a busy machine)
        with caplog.at_level(logging.WARNING, logger="duragent.tools.notify"):
            await notifier.drain()
    assert f"webhook notification to http://127.0.0.1:{port} failed" in caplog.text
    assert "XXSECRETXX" not in caplog.text


async def test_an_unreachable_webhook_is_logged_without_its_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: connections are refused
        url = f"http://127.0.0.1:{port}/hook?token=s3cr3t-value"
        policy = Policy(notify=Notify(True, (), (NotifyTarget("webhook", url),)))
        notifier = Notifier()
        with caplog.at_level(logging.WARNING, logger="duragent.tools.notify"):
            notifier.after_call(policy, "bash", "ls", session_id="s", agent="a", success=True)
            await notifier.drain()
    assert f"webhook notification to http://127.0.0.1:{port} failed" in caplog.text
    assert "s3cr3t" not in caplog.text


async def test_without_deliveries_a_notification_goes_to_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = Notifier()
    with caplog.at_level(logging.INFO, logger="duragent.tools.notify"):
        notifier.after_call(
            Policy(notify=Notify(enabled=True)),
            "bash",
            "ls",
            session_id="s1",
            agent="a",
            success=True,
        )
        notifier.after_call(Policy(), "bash", "pwd", session_id="s1", agent="a", success=True)
        await notifier.drain()
    assert "command ran: session=s1 agent=a command=ls" in caplog.text
    assert "pwd" not in caplog.text  # notify disabled


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_tiers_merge_patterns_and_deliveries_and_any_tier_enables(tmp_path: Path) -> None:
    workspace, agent = tmp_path / "policy.yaml", tmp_path / "agent"
    write(
        workspace,
        """\
        notify:
          enabled: true
          patterns: ["bash:git push*"]
          deliveries: [{type: webhook, url: "https://hooks.example/a"}]
        """,
    )
    write(agent / "policy.yaml", 'notify: {enabled: false, patterns: ["cli:deploy"]}\n')
    write(
        agent / "policy.local.yaml",
        """\
        notify:
          deliveries:
            - type: log
            - {type: webhook, url: "https://hooks.example/a"}
        """,
    )
    assert load_policy(workspace, agent).notify == Notify(
        enabled=True,
        patterns=("bash:git push*", "cli:deploy"),
        deliveries=(NotifyTarget("webhook", "https://hooks.example/a"), NotifyTarget("log")),
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("notify:\n  enabled: yes please\n", ":2: notify.enabled: must be true or false"),
        ("notify:\n  patterns: bash:*\n", ":2: notify.patterns: must be a list of patterns"),
        (
            "notify:\n  deliveries:\n    - type: email\n",
            ":3: notify.deliveries[0].type: invalid value (got 'email'; allowed: log, webhook)",
        ),
        (
            "notify:\n  deliveries:\n    - type: webhook\n      url: ftp://x\n",
            ":4: notify.deliveries[0].url: must be an http:// or https:// URL",
        ),
    ],
)
def test_a_malformed_notify_names_file_line_and_field(
    tmp_path: Path, text: str, where: str
) -> None:
    write(tmp_path / "agent" / "policy.yaml", text)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "none.yaml", tmp_path / "agent")
    assert str(caught.value).startswith(f"{tmp_path / 'agent' / 'policy.yaml'}{where}")


def test_only_scheme_host_and_port_of_a_webhook_are_ever_shown() -> None:
    assert safe_url("https://user:pw@hooks.slack.com/services/T/B/SECRET?x=1") == (
        "https://hooks.slack.com"
    )
    assert safe_url("http://127.0.0.1:8080/h?token=t") == "http://127.0.0.1:8080"
