"""Prometheus metrics: one registry per runtime, recorded where things happen.

Every layer records into one :class:`Metrics` object that the runtime builds and hands down
(low in the stack so the store, the session registry, the providers, the turn loop and the
front ends can all import it). It owns its own ``CollectorRegistry``, never the library's
global one: two runtimes in one process (tests, the bench) each count their own.

Cost: recording is a counter increment or a histogram observation on a label child that
was looked up once per turn or per call (``labels()`` is a dict lookup under a lock); nothing
is done per token. Values that already exist as state (live actors, queue depths) are read
at scrape time by :class:`_Sampled`, so they cost nothing between scrapes.

Labels are bounded sets: front end, agent, model, kind, action, status, gateway, outcome;
never a session id, chat id, user or message text (see ``specs/202611240915.metrics.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CONTEXT_ACTIONS", "CallMeter", "Metrics", "error_kind", "exposition_content_type"]

# Seconds: a turn with a remote model takes seconds to minutes.
_TURN_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, float("inf"))
# Seconds: a durable append is sub-millisecond on SSD, up to seconds on a stalled disk.
_FSYNC_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2, float("inf"))
_WAIT_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, float("inf"))
_LAG_BUCKETS = (0.01, 0.1, 0.5, 1, 5, 30, 60, 300, 3600, float("inf"))

CONTEXT_ACTIONS: Mapping[str, str] = {
    # BudgetReport field (as in each assistant event's ``budget``) → ``action`` label
    "history_omitted": "trimmed",
    "results_shrunk": "truncated",
    "results_masked": "masked",
    "groups_dropped": "groups_dropped",
    "calls_left_out": "calls_left_out",
    "results_pruned": "pruned",
}
"""The budget report's counters of what fitting a request did, as ``action`` labels."""

_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def error_kind(exc: BaseException) -> str:
    """A provider error's kind for a metric label: ``LLMRateLimitError`` → ``rate_limit``.

    A bounded set: the classes of ``duragent.errors``, never the message.
    """
    name = type(exc).__name__.removeprefix("LLM").removesuffix("Error") or "llm"
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def exposition_content_type() -> str:
    """The media type of :meth:`Metrics.exposition` (Prometheus text format 0.0.4)."""
    return _CONTENT_TYPE


Sample = tuple[tuple[str, ...], float]
"""One gauge value: its label values (in the gauge's label order) and the value."""


class _Sampled(Collector):
    """Gauges read at scrape time from live state (no cost between scrapes)."""

    def __init__(self) -> None:
        self._sources: list[tuple[str, str, tuple[str, ...], Callable[[], Iterable[Sample]]]] = []

    def add(
        self, name: str, doc: str, labels: tuple[str, ...], read: Callable[[], Iterable[Sample]]
    ) -> None:
        self._sources.append((name, doc, labels, read))

    def collect(self) -> Iterable[Metric]:
        for name, doc, labels, read in self._sources:
            family = GaugeMetricFamily(name, doc, labels=list(labels))
            for values, value in read():
                family.add_metric(list(values), value)
            yield family


class CallMeter:
    """One turn's view of the model-call metrics, its label children resolved once.

    The turn loop times each call and records the budget report and usage through this, so
    a call costs two observations and a few increments, not a ``labels()`` lookup each.
    """

    __slots__ = ("_call", "_first", "_input", "_output", "agent", "metrics", "model")

    def __init__(self, metrics: Metrics, agent: str, model: str) -> None:
        self.metrics = metrics
        self.agent = agent
        self.model = model
        self._call = metrics.model_call_seconds.labels(agent, model)
        self._first = metrics.model_first_token_seconds.labels(agent, model)
        self._input = metrics.tokens.labels(agent, model, "input")
        self._output = metrics.tokens.labels(agent, model, "output")

    def call(self, seconds: float, first_token: float | None) -> None:
        """A model call finished (``first_token``: seconds to the first text, if any)."""
        self._call.observe(seconds)
        if first_token is not None:
            self._first.observe(first_token)

    def usage(self, tokens_in: int, tokens_out: int, cost: float | None) -> None:
        """The call's usage as the provider reported it (cost when the model has pricing)."""
        if tokens_in:
            self._input.inc(tokens_in)
        if tokens_out:
            self._output.inc(tokens_out)
        if cost:
            self.metrics.cost.labels(self.agent, self.model).inc(cost)

    def budget(self, report: Mapping[str, int]) -> None:
        """What fitting the request did (the assistant event's ``budget`` record)."""
        m = self.metrics
        for field, action in CONTEXT_ACTIONS.items():
            count = report.get(field)
            if count:
                m.context_requests.labels(self.agent, action).inc()
                m.context_items.labels(self.agent, action).inc(count)

    def action(self, action: str) -> None:
        """One context event outside the budget report (``summaries``, ``overflow_retries``)."""
        self.metrics.context_requests.labels(self.agent, action).inc()

    def error(self, kind: str) -> None:
        """A model call failed; ``kind`` is the error's class name (a bounded set)."""
        self.metrics.provider_errors.labels(self.agent, self.model, kind).inc()


class Metrics:
    """Every metric duragent exports, in a registry of its own (see module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turn_seconds = Histogram(
            "duragent_turn_duration_seconds",
            "Whole turns: message recorded to reply recorded, by front end and agent.",
            ["front_end", "agent"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.model_call_seconds = Histogram(
            "duragent_model_call_duration_seconds",
            "One model request, sent to response done.",
            ["agent", "model"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.model_first_token_seconds = Histogram(
            "duragent_model_time_to_first_token_seconds",
            "One model request, sent to its first text.",
            ["agent", "model"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "duragent_model_tokens",
            "Tokens the providers reported, by direction (input, output).",
            ["agent", "model", "direction"],
            registry=r,
        )
        self.cost = Counter(
            "duragent_model_cost_usd",
            "What model calls cost in US dollars (models with pricing only).",
            ["agent", "model"],
            registry=r,
        )
        self.context_requests = Counter(
            "duragent_context_requests",
            "Model requests on which fitting the window trimmed history, truncated, masked or "
            "pruned tool results or dropped call groups; summaries written; overflow retries.",
            ["agent", "action"],
            registry=r,
        )
        self.context_items = Counter(
            "duragent_context_items",
            "Messages trimmed, results truncated, masked or pruned, call groups dropped, calls "
            "left out (the request's notice says how many).",
            ["agent", "action"],
            registry=r,
        )
        self.provider_errors = Counter(
            "duragent_provider_errors",
            "Model calls that failed, by error kind.",
            ["agent", "model", "kind"],
            registry=r,
        )
        self.model_retries = Counter(
            "duragent_model_retries",
            "Failed model calls the provider tried again (429, 5xx, timeouts), by kind.",
            ["model", "kind"],
            registry=r,
        )
        self.admission_wait_seconds = Histogram(
            "duragent_admission_wait_seconds",
            "Asks to session actors that waited for a permit, and how long.",
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.event_log_fsync_seconds = Histogram(
            "duragent_event_log_fsync_duration_seconds",
            "Durable appends to session event logs (the write and its fsync).",
            buckets=_FSYNC_BUCKETS,
            registry=r,
        )
        self.gateway_sends = Counter(
            "duragent_gateway_sends",
            "Messages chat gateways sent, by outcome (ok, failed).",
            ["gateway", "outcome"],
            registry=r,
        )
        self.gateway_retries = Counter(
            "duragent_gateway_retries",
            "Sends to a chat platform that were tried again.",
            ["gateway"],
            registry=r,
        )
        self.gateway_rate_limited = Counter(
            "duragent_gateway_rate_limited",
            "Answers 429 (rate limited) from a chat platform.",
            ["gateway"],
            registry=r,
        )
        self.scheduler_runs = Counter(
            "duragent_scheduler_runs",
            "Scheduled runs, by status.",
            ["status"],
            registry=r,
        )
        self.scheduler_fire_lag_seconds = Histogram(
            "duragent_scheduler_fire_lag_seconds",
            "How late a scheduled run started after its due time.",
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self._sampled = _Sampled()
        self._queues: dict[str, Callable[[], int]] = {}
        self._sampled.add(
            "duragent_chat_queue_depth",
            "Chat messages waiting for a turn (queued, buffered or steered), by gateway.",
            ("gateway",),
            self._queue_depths,
        )
        r.register(self._sampled)

    def sample(
        self,
        name: str,
        doc: str,
        read: Callable[[], Iterable[Sample]],
        labels: tuple[str, ...] = (),
    ) -> None:
        """Export a gauge ``name`` whose values ``read`` returns at each scrape."""
        self._sampled.add(name, doc, labels, read)

    def chat_queue(self, gateway: str, depth: Callable[[], int]) -> None:
        """Export ``gateway``'s chat queue depth (read at scrape time)."""
        self._queues[gateway] = depth

    def _queue_depths(self) -> list[Sample]:
        return [((name,), float(read())) for name, read in self._queues.items()]

    def meter(self, agent: str, model: str) -> CallMeter:
        """The model-call metrics of one turn of ``agent`` on ``model``."""
        return CallMeter(self, agent, model)

    def turn(self, front_end: str, agent: str, seconds: float) -> None:
        """A turn ended (whatever its outcome: a reply, an approval asked, an error)."""
        self.turn_seconds.labels(front_end, agent).observe(seconds)

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self.registry)
