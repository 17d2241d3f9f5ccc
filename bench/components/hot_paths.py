"""The timings the test suite used to compare, now a table: hot paths against their naive forms.

The tests keep a clock-independent check of each (work counted with ``tests/work.py``:
function calls or Python lines run), because a timed comparison fails when the machine is
busy (``specs/202612050400.tests-on-a-busy-machine.md``). Here, the same comparisons in
seconds, best of five rounds of twenty, each pair measured in one run:

- ``sse``: a ~170-word streamed reply through the lean SSE reader (``duragent.llm._sse``)
  against the OpenAI SDK's ``SSEDecoder`` (target: lean ≤ 0.5× the SDK's);
- ``call log``: the fake Telegram's record of 200,000 calls, polled for the newest against
  read whole (target: ≤ 1/100);
- ``outstanding``: a campaign chat's unanswered count with 20,000 settled messages, against
  walking them all (target: ≤ 1/50).

The long-history model call and turn are ``provider_request.py`` and ``bench/http/api.py`` (f).

    .venv/bin/python -m bench.components.hot_paths
"""

from __future__ import annotations

import time
from collections.abc import Callable

from openai._streaming import SSEDecoder

from duragent.llm._sse import SSEEvents
from duragent.testing.campaign_verdict import CampaignMessage, Chat
from duragent.testing.telegram_calls import CallLog


def best(work: Callable[[], object]) -> float:
    """Fastest of five rounds of twenty calls, in ms per call."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            work()
        runs.append(time.perf_counter() - start)
    return min(runs) / 20 * 1000


def sse() -> tuple[float, float]:
    words = [f'data: {{"choices":[{{"delta":{{"content":"w{i} "}}}}]}}\n\n' for i in range(170)]
    chunks = [w.encode() for w in words]

    def lean() -> None:
        decoder = SSEEvents()
        for chunk in chunks:
            decoder.feed(chunk)
        decoder.finish()

    def sdk() -> None:
        list(SSEDecoder().iter_bytes(iter(chunks)))

    return best(lean), best(sdk)


def call_log() -> tuple[float, float]:
    log = CallLog()
    for i in range(200_000):
        method = "sendMessage" if i % 3 else "getUpdates"
        log.add(method, {}, float(i), float(i), 200, {"ok": True}, chat_id=7, fault=None)
    return best(lambda: log.calls(since=log.count - 1)), best(lambda: log.calls(since=0))


def outstanding() -> tuple[float, float]:
    chat = Chat(0, 7, False, [CampaignMessage(7, i, f"t{i}") for i in range(20_001)])
    chat.next = len(chat.messages)
    for m in chat.messages[:-1]:
        m.answered_at = 1.0
    chat.outstanding()

    def naive() -> int:
        return sum(
            1 for m in chat.messages[: chat.next] if m.answered_at is None and m.undelivered is None
        )

    return best(chat.outstanding), best(naive)


def main() -> None:
    rows = [
        ("sse: lean reader / SDK decoder", sse(), 0.5),
        ("call log: newest / whole record", call_log(), 0.01),
        ("outstanding: cursor / walk all", outstanding(), 0.02),
    ]
    print(f"{'path':<34}{'fast ms':>10}{'naive ms':>10}{'ratio':>9}{'target':>9}  verdict")
    for name, (fast, naive), target in rows:
        ratio = fast / naive
        verdict = "ok" if ratio <= target else "MISSED"
        print(f"{name:<34}{fast:>10.4f}{naive:>10.4f}{ratio:>9.4f}{target:>9.3f}  {verdict}")


if __name__ == "__main__":
    main()
