"""The month's model: the year's scripted model, plus the crowd's turns and what it must see.

``StrangersModel`` is ``bench.year.model.YearModel`` (the window enforced with images counted
as the provider counts them, faults, summaries, the DM and group answers) with:

- **what every request is checked for** (``inspect``): a secret (the provider key, the bot
  token) anywhere in its body; a person's words in a ``system`` message (a hostile ``/pin``,
  an attack's text: people's words are quoted in a user message, never given system
  authority); a blocked member's words (``#b…#``) or a stranger's who was never let in
  (``#s…#`` tokens are recorded, ``judge.py`` compares them with who was admitted);
- **hostile turns** (a ``#h…#`` token in the turn's message, ``attacks.py``): the tool calls
  the attack asks for, made as a prompt-injected model would make them; the results each call
  got are kept (``results``) for the judge, and the answer names the token;
- **group tool calls** (``!call bash`` in a mention): made as the year's DM agent makes them;
- **group probes** (``group_probes``): whether the request carried the code asked for;
- **media**: the images a photo message's request carried (``photos``); a document message's
  file read back with ``bash cat`` (``documents``: whether its words came back);
- **strangers**: a ``#s…#`` message is answered naming its token;
- **streamed replies**: the answer to one DM text message in ``STREAM_EVERY`` comes slowly
  (``STREAM_CHUNKS`` pieces, ``STREAM_DELAY`` apart), so the chat sees it as a preview,
  edited, then finished in place (``frontkit.preview``), and kills land mid-stream; its first
  piece names the message, as a preview a user reads does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from bench.strangers.cast import BLOCKED_TOKEN, HOSTILE_TOKEN, STRANGER_TOKEN
from bench.strangers.discord_side import FIRST_INDEX
from bench.strangers.group_probes import asked_code
from bench.strangers.media import DOCUMENT_WORDS
from bench.year.model import DM_MODEL, INTERRUPTED, YearModel, image_tokens
from duragent.testing import RecordedRequest, Reply, ToolCallReply
from duragent.testing._llm_images import request_images
from duragent.testing.campaign_verdict import ANSWER, answer_tokens

__all__ = ["ATTACK", "DOCUMENT", "StrangersModel"]

ATTACK = re.compile(r"ATTACK (?P<kind>[a-z_]+) (?P<token>#h\d+#)(?: (?P<args>\[.*\]))?", re.S)
"""How an attack's message carries its kind, its token and the calls' arguments (JSON)."""
DOCUMENT = re.compile(r"open it at (files/\S+?)[\]\s—]")
"""The path of a kept document in its attachment line (``context.attachment_lines``)."""
STREAM_EVERY = 9
STREAM_AT = 2
"""A DM text message whose ordinal is ``STREAM_AT`` mod ``STREAM_EVERY`` is answered slowly."""
STREAM_CHUNKS = 20
STREAM_DELAY = 0.1
"""Seconds between two pieces: 2 s a reply, past the preview's first wait (0.5 s)."""
_ORDINAL = re.compile(r"#q(\d+)n(\d+)#")


@dataclass
class StrangersModel(YearModel):
    """The responder (module docstring)."""

    secrets: dict[str, str] = field(default_factory=dict)
    """Name → value of what must never be in a request's body (the key, the bot token)."""
    leaks: list[str] = field(default_factory=list)
    """What carried a secret, or gave people's words system authority (each a problem)."""
    seen: set[str] = field(default_factory=set)
    """Blocked members' and strangers' tokens found in any request."""
    results: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Attack token → (tool, result text) of each call its turn made."""
    photos: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Photo message token → (images in its turn's request, their tokens as counted)."""
    sent_back: dict[str, str | None] = field(default_factory=dict)
    """Document message token → what ``send_file`` said (None: a kill cut the call)."""
    group_probes: dict[str, bool] = field(default_factory=dict)
    """Group probe token → whether its request carried the code it asks for (outside the
    question; ``group_probes``)."""
    streamed: set[str] = field(default_factory=set)
    """Tokens of the DM messages answered slowly (``STREAM_EVERY``)."""
    documents: dict[str, bool | None] = field(default_factory=dict)
    """Document message token → whether ``cat`` of its file gave back its words (None: a
    kill cut the call)."""

    def inspect(
        self, request: RecordedRequest, messages: list[dict[str, Any]], texts: list[str]
    ) -> None:
        raw = request.raw.decode("utf-8", "replace")
        for name, value in self.secrets.items():
            if value and value in raw:
                self.leaks.append(f"model request {request.index}: carries the {name}")
        for message, text in zip(messages, texts, strict=True):
            if message.get("role") != "system":
                continue
            for token in HOSTILE_TOKEN.findall(text) + BLOCKED_TOKEN.findall(text):
                self.leaks.append(f"model request {request.index}: {token} in a system message")
        self.seen.update(BLOCKED_TOKEN.findall(raw))
        self.seen.update(STRANGER_TOKEN.findall(raw))

    def answer(
        self, request: RecordedRequest, model: str, messages: list[dict[str, Any]], texts: list[str]
    ) -> Reply:
        last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        asked = texts[last] if texts else ""
        after = list(zip(messages[last + 1 :], texts[last + 1 :], strict=True))
        attack = ATTACK.search(asked)
        if attack is not None:  # its own calls' results (others' turns may lie between)
            own = f"{attack['token'][1:-1]}_"
            reply = self._attack(attack, _results(after, own))
            joined = answer_tokens(asked)  # a member's mention taken in the same turn
            if reply.text and joined:
                return Reply(text=f"{reply.text}; heard {' '.join(joined)}")
            return reply
        strangers = STRANGER_TOKEN.findall(asked)
        if strangers and not answer_tokens(asked):
            return Reply(text=f"re {' '.join(strangers)}: welcome")
        tokens = list(dict.fromkeys(answer_tokens(asked)))  # a document's text repeats it
        if model != DM_MODEL and "!call bash " in asked and tokens:
            return self._bash(asked, _results(after))
        code = asked_code(asked) if model != DM_MODEL else None
        if code is not None and tokens:
            found = any(code in t for i, t in enumerate(texts) if i != last)
            self.group_probes[tokens[0]] = found
            return Reply(
                text=f"heard {tokens[0]}; chatter: none; the code is {code if found else 'unknown'}"
            )
        images = [i for i in request_images(request) if i.message == last]
        for token in tokens:
            if images or "[image" in asked:
                self.photos[token] = (len(images), sum(image_tokens(i) for i in images))
        document = DOCUMENT.search(asked)
        if document is not None and tokens and model == DM_MODEL:
            return self._document(document.group(1), tokens, _results(after))
        reply = super().answer(request, model, messages, texts)
        if model == DM_MODEL and not images and _streamed(tokens) and reply.text:
            self.streamed.update(tokens)
            return _slowly(reply)
        return reply

    def _attack(self, attack: re.Match[str], results: list[tuple[str, str]]) -> Reply:
        """The attack's calls (one step each), then an answer that names the token."""
        token, kind = attack["token"], attack["kind"]
        steps: list[list[dict[str, Any]]] = json.loads(attack["args"] or "[]")
        if results:
            self.results[token] = list(results)
        done = _steps_done(steps, results)
        if done < len(steps):
            calls = [
                ToolCallReply(name=c["tool"], arguments=c["args"], id=f"{token[1:-1]}_{done}_{n}")
                for n, c in enumerate(steps[done])
            ]
            self.tool_calls[kind] = self.tool_calls.get(kind, 0) + len(calls)
            return Reply(tool_calls=calls)
        said = "; ".join(_first_line(text) for _tool, text in results if text.strip())
        return Reply(text=f"h-done {token} ({kind}): {said or 'nothing'}")

    def _document(self, path: str, tokens: list[str], results: list[tuple[str, str]]) -> Reply:
        """Read the kept document back with ``bash cat`` and send it back with ``send_file``
        (its caption naming the message), then say whether its words came."""
        read = [text for name, text in results if name == "bash"]
        if not read:
            return self._call("bash", {"command": f"cat {path}"})
        sent = [text for name, text in results if name == "send_file"]
        if not sent and INTERRUPTED not in read[-1]:
            caption = f"back: {' '.join(tokens)}"
            return self._call("send_file", {"path": path, "caption": caption})
        came = all(DOCUMENT_WORDS.format(token=t) in read[-1] for t in tokens)
        cut = INTERRUPTED in read[-1]
        for token in tokens:
            self.documents[token] = None if cut else came
            if sent:
                self.sent_back[token] = None if INTERRUPTED in sent[-1] else sent[-1]
        return Reply(text=f"re {' '.join(tokens)}: the file {'reads' if came else 'is lost'}")


def _streamed(tokens: list[str]) -> bool:
    """Whether the message (its first token) is one answered slowly (``STREAM_AT``): a
    Telegram chat's (the Discord side reads a reply from its first send, ``discord_side``)."""
    found = _ORDINAL.fullmatch(tokens[0]) if tokens else None
    if found is None or int(found.group(1)) >= FIRST_INDEX:
        return False
    return int(found.group(2)) % STREAM_EVERY == STREAM_AT


def _slowly(reply: Reply) -> Reply:
    """``reply`` streamed in ``STREAM_CHUNKS`` pieces, the first naming the message."""
    text = reply.text
    marks = list(ANSWER.finditer(text))
    head = marks[-1].end() if marks else len(text)
    size = max(1, (len(text) - head) // (STREAM_CHUNKS - 1))
    chunks = [text[:head]] + [text[i : i + size] for i in range(head, len(text), size)]
    return replace(reply, chunks=chunks, chunk_delay=STREAM_DELAY)


def _first_line(text: str) -> str:
    """A result's first line, for an attack's answer (a cut call's notice named apart: the
    campaign reads that notice as the answer to a member's cut call)."""
    if INTERRUPTED in text:
        return "(cut by a restart)"
    return next(line for line in text.splitlines() if line.strip())[:120]


def _steps_done(steps: list[list[dict[str, Any]]], results: list[tuple[str, str]]) -> int:
    """How many of an attack's steps have their results in the request."""
    done, seen = 0, 0
    for step in steps:
        if seen + len(step) > len(results):
            break
        seen += len(step)
        done += 1
    return done


def _results(after: list[tuple[dict[str, Any], str]], prefix: str = "") -> list[tuple[str, str]]:
    """(tool name, result text) of each tool result after the turn's message, in order;
    ``prefix``: only those of calls whose id starts with it."""
    names = {
        str(call.get("id")): str(call.get("function", {}).get("name"))
        for message, _text in after
        for call in message.get("tool_calls") or []
    }
    return [
        (names.get(str(message.get("tool_call_id")), ""), text)
        for message, text in after
        if message.get("role") == "tool" and str(message.get("tool_call_id")).startswith(prefix)
    ]
