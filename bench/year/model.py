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
  notice); when the result was cut and saved (``… saved as out_…``), the next step first
  reads a line range of it back through ``tool_output`` and ``reads`` records whether the
  lines came back as the command printed them (``row_line``); ``!remember <note>`` calls the
  memory tool (``remember``) and ``!recall <note>`` calls ``recall``, ``recalls`` recording
  whether the note came back; ``PROBE`` asks for the chat's secret and is answered from
  whatever the request carries (the summary or pins, long after the message that gave it
  left the history; nothing, after a ``/reset``); anything else is answered with
  ``re <token>:`` and some prose;
- group turns: ``campaign_verdict.group_model`` (it names the chatter its request carried);
- scheduled tasks (``[Scheduled Task]``): a report stamped with the simulated time.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bench.context.turns import SUMMARY_MARK, faithful_summary
from duragent.context.tokens import counter_for_model
from duragent.core.messages import Message
from duragent.testing import Fault, RecordedRequest, Reply, ToolCallReply
from duragent.testing._llm_images import RequestImage, request_images
from duragent.testing.campaign_verdict import answer_tokens, group_model

__all__ = [
    "DM_MODEL",
    "GROUP_MODEL",
    "WINDOWS",
    "YearModel",
    "image_tokens",
    "read_range",
    "row_line",
    "secret_of",
]

DM_MODEL = "gpt-4o-mini"
GROUP_MODEL = "gpt-4o"
WINDOWS = {DM_MODEL: 8192, GROUP_MODEL: 32768}
SCHEDULED = "[Scheduled Task]"
_SECRET = re.compile(r"kestrel-\d+")
_SAVED = re.compile(r"saved as (out_[0-9A-Z]{26})")
INTERRUPTED = "interrupted by server restart"
PRUNED = "[old tool output pruned from the context"
"""How a tool output an earlier turn saw reads once pruned (``duragent.context.pruning``)."""
ROWS = 10_000
"""Lines of a 200 KB output after its first (``row_line``): ``seq`` prints them."""


def row_line(token: str, number: int) -> str:
    """Line ``number`` (1-based, ≥ 2) of a 200 KB output: ``seq -f 'row %06g <token>'``
    (the token without its ``#``: the approval prompt quotes the command, and a token quoted
    twice would read as two prompts)."""
    return f"row {number - 1:06d} {token.strip('#')}"


def read_range(token: str) -> int:
    """The first line of the range the model reads back (two lines), somewhere in the middle."""
    return 2 + random.Random(token).randrange(ROWS - 2)


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
    reads: dict[str, bool | None] = field(default_factory=dict)
    """Token of a cut 200 KB output → its line range came back right (None: a kill cut it)."""
    tool_calls: dict[str, int] = field(default_factory=dict)
    """Tool calls the model asked for, by tool."""
    remembered: dict[str, bool | None] = field(default_factory=dict)
    """Note → the memory tool said it was remembered (None: a kill cut the call)."""
    recalls: dict[str, bool | None] = field(default_factory=dict)
    """Note → ``recall`` returned it (None: a kill cut the call)."""
    days_between: dict[str, float] = field(default_factory=dict)
    """Note → simulated days from its ``remember`` call to its ``recall`` call."""
    _remembered_ms: dict[str, int] = field(default_factory=dict)

    def __call__(self, request: RecordedRequest) -> Reply | Fault:
        body = request.json
        model = str(body.get("model") or GROUP_MODEL)
        messages: list[dict[str, Any]] = list(body.get("messages") or [])
        texts = [_text(m) for m in messages]
        counter = counter_for_model(model)
        prompt = counter.count_messages(
            [Message.system(texts[0] if texts else ""), *(Message.user(t) for t in texts[1:])]
        ) + sum(image_tokens(image) for image in request_images(request))
        self.requests += 1
        self.inspect(request, messages, texts)
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
        reply = self.answer(request, model, messages, texts)
        return replace(  # as ``answer`` shaped it (a world may stream it slowly)
            reply,
            prompt_tokens=prompt,
            completion_tokens=counter.count_text(reply.text) + 20 * len(reply.tool_calls),
            delay=delay,
        )

    def inspect(
        self, request: RecordedRequest, messages: list[dict[str, Any]], texts: list[str]
    ) -> None:
        """Look at every request that reached the model (the year looks at none)."""
        return None

    def answer(
        self, request: RecordedRequest, model: str, messages: list[dict[str, Any]], texts: list[str]
    ) -> Reply:
        """The answer to a turn's request (not a summary's): by agent, told by its model."""
        if model == DM_MODEL:
            return self._dm(messages, texts)
        if any(SCHEDULED in t for t in texts[-1:]):
            return Reply(text=f"scheduled report, simulated time {self.now_ms()}")
        return group_model(request)

    def _dm(self, messages: list[dict[str, Any]], texts: list[str]) -> Reply:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        asked = texts[last_user]
        results = _results(messages[last_user + 1 :], texts[last_user + 1 :])
        tokens = answer_tokens(asked)
        if "!call bash " in asked:
            return self._bash(asked, results)
        for verb in ("remember", "recall"):
            if f"!{verb} " in asked:
                return self._memory(verb, asked.split(f"!{verb} ", 1)[1].strip(), tokens, results)
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

    def _call(self, name: str, args: dict[str, Any]) -> Reply:
        self.tool_calls[name] = self.tool_calls.get(name, 0) + 1
        return Reply(tool_calls=[ToolCallReply(name=name, arguments=args)])

    def _bash(self, asked: str, results: list[tuple[str, str]]) -> Reply:
        """The call, then (a cut output) a range read back through ``tool_output``, the answer."""
        args = json.loads(asked.split("!call bash ", 1)[1].strip())
        ran = [text for name, text in results if name == "bash"]
        reads = [text for name, text in results if name == "tool_output"]
        if not ran:
            return self._call("bash", args)
        first = ran[-1].strip()
        saved = _SAVED.search(first)
        token = next(iter(answer_tokens(str(args.get("command", "")))), "")
        # a kill cut the read back, and the turn that goes on sees the output pruned from its
        # history: the model reads its first lines back (it can only answer from what it has)
        pruned = first.startswith(PRUNED)
        start = 1 if pruned else read_range(token)
        again = bool(reads) and INTERRUPTED in reads[-1]
        if saved is not None and (not reads or again) and INTERRUPTED not in first:
            lines = {"id": saved.group(1), "mode": "range", "start": start, "end": start + 1}
            return self._call("tool_output", lines)
        said = ""
        if saved is not None and reads and pruned:  # after ``tool_output``'s header line
            first = "\n".join(reads[-1].strip().splitlines()[1:])
        elif saved is not None and reads:
            back = reads[-1]
            right = row_line(token, start) in back and row_line(token, start + 1) in back
            self.reads[token] = None if INTERRUPTED in back else right
            said = f"; line {start} reads {'back right' if right else 'wrong'}"
        return Reply(text=f"done: {first.splitlines()[0][:300] if first else ''}{said}")

    def _memory(
        self, verb: str, note: str, tokens: list[str], results: list[tuple[str, str]]
    ) -> Reply:
        """``remember`` or ``recall`` through the memory tool, then the answer."""
        done = [text for name, text in results if name == "memory"]
        if not done and verb == "remember":
            self._remembered_ms.setdefault(note, self.now_ms())
        elif not done and note in self._remembered_ms:
            self.days_between[note] = (self.now_ms() - self._remembered_ms[note]) / 86_400_000
        if not done:
            args: dict[str, Any] = {"action": verb}
            if verb == "remember":
                args["content"] = note
            else:
                args["days"] = 30
            return self._call("memory", args)
        result = done[-1]
        if verb == "remember":
            self.remembered[note] = (
                None if INTERRUPTED in result else result.startswith("Remembered")
            )
        else:
            self.recalls[note] = None if INTERRUPTED in result else note in result
        return Reply(text=f"re {' '.join(tokens)}: {verb} done ({result[:80]})")


def _results(messages: list[dict[str, Any]], texts: list[str]) -> list[tuple[str, str]]:
    """(tool name, result text) of each tool result, in order (names from the calls)."""
    names = {
        str(call.get("id")): str(call.get("function", {}).get("name"))
        for m in messages
        for call in m.get("tool_calls") or []
    }
    return [
        (names.get(str(m.get("tool_call_id")), ""), text)
        for m, text in zip(messages, texts, strict=True)
        if m.get("role") == "tool"
    ]


def image_tokens(image: RequestImage) -> int:
    """What an OpenAI vision model counts for ``image``, as the provider counts it: 85 at
    ``detail: low``; else the image scaled into 2048 x 2048 and its shortest side to 768
    (never up), 170 per 512-pixel tile covering it, plus 85. An image whose size cannot be
    read counts as the largest the provider takes (the count must never be low)."""
    if image.detail == "low":
        return 85
    width: float = image.width or 2048
    height: float = image.height or 768
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    width, height = width * scale, height * scale
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def _text(message: dict[str, Any]) -> str:
    """A message's words as the tokenizer counts them: its text parts (images are counted
    apart, ``image_tokens``) and its calls."""
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else json.dumps(part)
            for part in content
            if not (isinstance(part, dict) and part.get("type") in ("image_url", "image"))
        )
    else:
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
    for call in message.get("tool_calls") or []:
        text += json.dumps(call.get("function", {}))
    return text
