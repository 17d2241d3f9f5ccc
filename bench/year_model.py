"""The simulated year's model: a scripted server that enforces its window as a provider does.

One responder behind ``duragent.testing.ScriptedLLMServer`` (real HTTP, the OpenAI wire)
answers every agent of the year, told apart by the model name the agent sends:

- ``WINDOWS``: ``gpt-4o-mini`` (the DM agent) has an 8K window, ``gpt-4o`` (groups and the
  scheduled tasks) 32K. A request whose prompt, counted with the agent's own tokenizer, is
  over the window gets a real 400 ``context_length_exceeded`` and is counted
  (``overflows``): the year's claim is that there are none.
- every answer reports the usage it saw (``prompt_tokens``), and ``calls`` keeps one
  ``(simulated ms, prompt tokens, kind)`` per request for the picture;
- sometimes slow (``Reply.delay``), sometimes failing (429, 503) the way providers do,
  so the runtime's retries are part of the year;
- the summariser's requests (``SUMMARY_PROMPT``) get ``context_turns.faithful_summary``: the
  essentials the user gave (``SECRET:`` lines) and a progress line per message;
- DM turns: ``!call bash {json}`` becomes that tool call, and once its result is in the
  request the answer quotes the result's first line (``42-<token>`` or the interruption
  notice); ``PROBE`` asks for the chat's secret and is answered from whatever the request
  carries (the summary or pins, long after the message that gave it left the history);
  anything else is answered with ``re <token>:`` and some prose;
- group turns: ``campaign_verdict.group_model`` (it names the chatter its request carried);
- scheduled tasks (``[Scheduled Task]``): a report stamped with the simulated time.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_turns import SUMMARY_MARK, faithful_summary  # bench/ is on sys.path

from duragent.context.tokens import counter_for_model
from duragent.core.messages import Message
from duragent.testing import Fault, RecordedRequest, Reply, ToolCallReply
from tests.gateways.campaign_verdict import answer_tokens, group_model

__all__ = ["DM_MODEL", "GROUP_MODEL", "WINDOWS", "YearModel", "secret_of"]

DM_MODEL = "gpt-4o-mini"
GROUP_MODEL = "gpt-4o"
WINDOWS = {DM_MODEL: 8192, GROUP_MODEL: 32768}
SCHEDULED = "[Scheduled Task]"
_SECRET = re.compile(r"kestrel-\d+")


def secret_of(chat: int) -> str:
    """The fact a probed chat gives in its first message (``SECRET:`` survives summaries)."""
    return f"SECRET: the vault code of chat {chat} is kestrel-{chat}."


@dataclass
class YearModel:
    """The responder (module docstring); ``now_ms`` reads the simulated clock."""

    now_ms: Callable[[], int]
    prose: str
    fault_every: int = 53
    slow_every: int = 29
    requests: int = 0
    overflows: int = 0
    faults: int = 0
    summary_calls: int = 0
    summary_tokens: int = 0
    calls: list[tuple[int, int, str]] = field(default_factory=list)
    probes: dict[str, bool] = field(default_factory=dict)
    """Probe token → whether the request carried the chat's secret."""

    def __call__(self, request: RecordedRequest) -> Reply | Fault:
        body = request.json
        model = str(body.get("model") or GROUP_MODEL)
        messages: list[dict[str, Any]] = list(body.get("messages") or [])
        texts = [_text(m) for m in messages]
        counter = counter_for_model(model)
        prompt = counter.count_messages(
            [Message.system(texts[0] if texts else ""), *(Message.user(t) for t in texts[1:])]
        )
        self.requests += 1
        summary = bool(texts) and texts[0].startswith(SUMMARY_MARK)
        self.calls.append((self.now_ms(), prompt, "summary" if summary else model))
        if prompt > WINDOWS.get(model, WINDOWS[GROUP_MODEL]):
            self.overflows += 1
            return Fault.context_length_exceeded()
        if not summary and self.requests % self.fault_every == 0:
            self.faults += 1
            if self.requests % (2 * self.fault_every) == 0:
                return Fault.server_error(503)
            return Fault.rate_limited(retry_after=0.2)
        delay = 0.2 if self.requests % self.slow_every == 0 else 0.0
        if summary:
            allowance = int(body.get("max_tokens") or 1024)
            text = faithful_summary(texts[-1], allowance, counter)
            out = counter.count_text(text)
            self.summary_calls += 1
            self.summary_tokens += prompt + out
            return Reply(text=text, prompt_tokens=prompt, completion_tokens=out)
        if model == DM_MODEL:
            reply = self._dm(messages, texts)
        elif any(SCHEDULED in t for t in texts[-1:]):
            reply = Reply(text=f"scheduled report, simulated time {self.now_ms()}")
        else:
            reply = group_model(request)
        return Reply(
            text=reply.text,
            tool_calls=reply.tool_calls,
            prompt_tokens=prompt,
            completion_tokens=counter.count_text(reply.text) + 20 * len(reply.tool_calls),
            delay=delay,
        )

    def _dm(self, messages: list[dict[str, Any]], texts: list[str]) -> Reply:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        asked = texts[last_user]
        results = [texts[i] for i in range(last_user + 1, len(messages))]
        tokens = answer_tokens(asked)
        if "!call bash " in asked:
            if not any(m.get("role") == "tool" for m in messages[last_user + 1 :]):
                args = json.loads(asked.split("!call bash ", 1)[1].strip())
                return Reply(tool_calls=[ToolCallReply(name="bash", arguments=args)])
            first = next((r for r in reversed(results) if r.strip()), "").strip()
            return Reply(text=f"done: {first[:300]}")
        if "PROBE" in asked:
            earlier = "\n".join(texts[:last_user])
            found = _SECRET.search(earlier)
            for token in tokens:
                self.probes[token] = found is not None
            said = found.group(0) if found else "I do not know"
            return Reply(text=f"re {' '.join(tokens)}: the code is {said}")
        rng = random.Random(" ".join(tokens))
        start = rng.randrange(0, max(1, len(self.prose) - 2000))
        prose = self.prose[start : start + rng.randint(150, 1500)]
        return Reply(text=f"re {' '.join(tokens)}: {prose}")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    for call in message.get("tool_calls") or []:
        text += json.dumps(call.get("function", {}))
    return text
