"""``observability.metrics``: a registry per runtime, bounded labels, the kit's counted ports."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from duragent.errors import ContextLengthExceededError, LLMRateLimitError, LLMServerError
from duragent.frontkit import ChatRef, MemoryOutbound, metered
from duragent.observability.metrics import Metrics, error_kind


def _samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = metrics.exposition().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_two_runtimes_in_one_process_count_apart() -> None:
    one, two = Metrics(), Metrics()  # the global default registry would refuse the second
    one.turn("http", "bot", 0.5)
    assert (
        _samples(one)[
            (
                "duragent_turn_duration_seconds_count",
                frozenset({("front_end", "http"), ("agent", "bot")}),
            )
        ]
        == 1
    )
    assert not any(name == "duragent_turn_duration_seconds_count" for name, _ in _samples(two))


def test_a_budget_report_counts_requests_and_items_per_action() -> None:
    metrics = Metrics()
    meter = metrics.meter("bot", "gpt-4o")
    meter.budget({"window": 8000, "history_omitted": 4, "results_shrunk": 2})
    meter.budget({"window": 8000, "history_omitted": 1, "calls_repaired": 3})
    meter.action("overflow_retries")
    found = _samples(metrics)

    def get(name: str, action: str) -> float:
        return found.get((name, frozenset({("agent", "bot"), ("action", action)})), 0.0)

    assert get("duragent_context_requests_total", "trimmed") == 2
    assert get("duragent_context_items_total", "trimmed") == 5
    assert get("duragent_context_requests_total", "truncated") == 1
    assert get("duragent_context_items_total", "truncated") == 2
    assert get("duragent_context_requests_total", "overflow_retries") == 1
    assert get("duragent_context_requests_total", "masked") == 0


def test_usage_counts_tokens_by_direction_and_cost_only_when_priced() -> None:
    metrics = Metrics()
    meter = metrics.meter("bot", "gpt-4o")
    meter.usage(120, 30, None)
    meter.usage(80, 20, 0.25)
    found = _samples(metrics)
    base = {("agent", "bot"), ("model", "gpt-4o")}
    assert found[("duragent_model_tokens_total", frozenset(base | {("direction", "input")}))] == 200
    assert found[("duragent_model_tokens_total", frozenset(base | {("direction", "output")}))] == 50
    assert found[("duragent_model_cost_usd_total", frozenset(base))] == 0.25


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (LLMRateLimitError("slow down"), "rate_limit"),
        (LLMServerError("boom"), "server"),
        (ContextLengthExceededError("too long"), "context_length_exceeded"),
    ],
)
def test_a_provider_error_kind_is_its_class_never_its_message(error: Exception, kind: str) -> None:
    assert error_kind(error) == kind


class _Down(MemoryOutbound):
    """A platform that refuses every message."""

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> Any:
        raise OSError("platform down")


async def test_a_metered_port_counts_sent_and_failed_messages_by_gateway() -> None:
    metrics = Metrics()
    inner = MemoryOutbound()
    port = metered(inner, "telegram", metrics)
    assert metered(port, "telegram", metrics) is port  # never counted twice
    assert metered(inner, "telegram", None) is inner  # metrics off: the port itself
    chat = ChatRef("telegram", "42")
    await port.send_text(chat, "hello")
    await port.send_typing(chat)  # a courtesy, not a message
    await port.ask_approval(chat, session_id="s", call_id="c", command="ls")

    with pytest.raises(OSError, match="platform down"):
        await metered(_Down(), "telegram", metrics).send_text(chat, "lost")
    found = _samples(metrics)
    ok = ("duragent_gateway_sends_total", frozenset({("gateway", "telegram"), ("outcome", "ok")}))
    failed = ok[0], frozenset({("gateway", "telegram"), ("outcome", "failed")})
    assert (found[ok], found[failed]) == (2, 1)


def test_sampled_gauges_read_live_state_at_scrape_time() -> None:
    metrics = Metrics()
    depth = [3]
    metrics.chat_queue("telegram", lambda: depth[0])
    key = ("duragent_chat_queue_depth", frozenset({("gateway", "telegram")}))
    assert _samples(metrics)[key] == 3
    depth[0] = 0
    assert _samples(metrics)[key] == 0
