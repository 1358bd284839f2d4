"""Prometheus metrics: one registry per gateway, fed by the event stream and a few measuring points.

Most of what is counted is already an event of the trace stream (``route``, ``tool_call``, ``handoff``,
``guardrail``, ``interrupt``, ``run``): :meth:`Metrics.observe` sees every one of them, before tracing's own
switch and sampling, so the figures do not depend on what is kept. Model calls are counted where they are
made (:class:`bot.ops.metered.ObservedModel`, around every model the gateway builds: agents', the router's,
the summariser's), intake and delivery count messages, the store's writer times its commits, channels
report 429s. Gauges that describe a state (queue depth, pending interrupts, outbox backlog) are read when
Prometheus scrapes (:class:`Sample`).

Labels never carry chat or user ids; agent, tool and model names are bounded (:data:`MAX_VALUES` distinct
values per metric and label, then ``other``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from bot.ops.loopmetrics import LoopCounter, LoopHistogram

disable_created_metrics()  # no *_created series beside every counter and histogram

MAX_VALUES = 200
"""Distinct values one label of one metric may take; later ones are counted as ``other``."""
OTHER = "other"
SERIES_KEPT = 4096
"""Label values (as given, before bounding) whose series are kept looked up; past it they are looked up anew."""

FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Buckets (seconds) for what should take milliseconds: acknowledgements, commits."""
SLOW = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""Buckets (seconds) for model calls and runs."""
TOKEN_KINDS = ("input", "output", "thinking", "cached")


@dataclass
class Sample:
    """The state read at a scrape."""

    queue: Mapping[int, tuple[int, float]] = field(default_factory=dict)
    """Per bus partition: events waiting (or being handled), and the age in seconds of the oldest."""
    interrupts_pending: int = 0
    outbox_backlog: int = 0
    """Committed replies and prompts not yet marked sent."""
    inbox_pending: int = 0
    """Accepted events not yet handled."""
    leases: LeaseState | None = None
    """A worker's partition leases (None: not a worker)."""


@dataclass
class LeaseState:
    """What a worker holds of the bus, and whether it keeps it."""

    held: int
    renewal_age_s: float
    """Seconds since the leases were last renewed (over the lease time: they may have lapsed)."""
    lost: int
    """Partitions lost since start (lapsed while this worker still ran, or taken)."""


class Metrics:
    """Every metric of the gateway, in its own registry (two gateways in one process do not mix)."""

    def __init__(self) -> None:
        self.registry = reg = CollectorRegistry()
        self._seen: dict[tuple[str, str], set[str]] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._model_series: dict[tuple[str, str, bool], tuple[Any, Any, str]] = {}
        """Per provider, model and outcome: the call counter's and the timer's children, and the model's label
        (:meth:`model_call`: one lookup instead of a bound check and two; see bench/README.md, "Metrics on the
        event loop")."""
        # The per-message series by what names them (a label, once bounded, stays what it was): one lookup
        # instead of a bound check and a child's, on every route, run and run timing (see bench/README.md).
        self._route_series: dict[tuple[str, str, str], Any] = {}
        self._run_series: dict[tuple[str, str], Any] = {}
        self._worked_series: dict[tuple[str, str], Any] = {}

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(name, doc, labels, registry=reg)

        def gauge(name: str, doc: str, *labels: str) -> Gauge:
            return Gauge(name, doc, labels, registry=reg)

        def histogram(name: str, doc: str, buckets: tuple[float, ...], *labels: str) -> Histogram:
            return Histogram(name, doc, labels, buckets=buckets, registry=reg)

        # Updated on the event loop, per message: plain numbers, read when Prometheus scrapes (bot.ops.loopmetrics).
        def loop_counter(name: str, doc: str, *labels: str) -> LoopCounter:
            return LoopCounter(name, doc, labels, reg)

        def loop_histogram(name: str, doc: str, buckets: tuple[float, ...], *labels: str) -> LoopHistogram:
            return LoopHistogram(name, doc, labels, reg, buckets)

        self.received = loop_counter("bot_messages_received", "Inbound events accepted (durable)", "channel", "kind")
        self.sent = loop_counter("bot_messages_sent", "Messages delivered to a platform", "channel", "kind")
        self.send_failures = counter("bot_messages_send_failed", "Deliveries that failed", "channel")
        self.refused = counter("bot_messages_refused", "Inbound events refused (a limit, a stranger)", "channel")
        self.ack = loop_histogram(
            "bot_ack_seconds", "From receipt to the durable commit that allows the acknowledgement", FAST, "channel"
        )
        self.queue_depth = gauge("bot_queue_depth", "Events waiting or being handled", "partition")
        self.queue_age = gauge("bot_queue_oldest_seconds", "Age of the oldest waiting event", "partition")
        self.inbox_pending = gauge("bot_inbox_pending", "Accepted events not yet handled")
        self.routes = loop_counter("bot_routing_decisions", "Routing decisions", "strategy", "method", "agent")
        self.runs = loop_counter("bot_runs", "Runs ended, by status", "agent", "status")
        self.run_seconds = loop_histogram(
            "bot_run_seconds",
            "Time a run works until it answers, pauses or fails (waiting for people excluded)",
            SLOW,
            "agent",
            "outcome",
        )
        self.model_calls = loop_counter("bot_model_calls", "Model calls", "provider", "model", "outcome")
        self.model_seconds = loop_histogram("bot_model_seconds", "Model call latency", SLOW, "provider", "model")
        self.model_tokens = loop_counter(
            "bot_model_tokens",
            "Model tokens (thinking is part of output, cached part of input)",
            "provider",
            "model",
            "kind",
        )
        self.tool_calls = loop_counter("bot_tool_calls", "Tool calls", "tool", "outcome")
        self.handoffs = counter("bot_handoffs", "Handoffs between agents", "source", "target", "status")
        self.guardrails = counter("bot_guardrail_checks", "Guardrail checks", "agent", "status")
        self.interrupts = loop_counter("bot_interrupts", "Interrupts by what happened", "kind", "event")
        self.pending = gauge("bot_interrupts_pending", "Interrupts waiting for a person")
        self.outbox = gauge("bot_outbox_backlog", "Replies and prompts committed but not yet sent")
        self.commit_seconds = histogram("bot_store_commit_seconds", "Store group commits", FAST, "dialect")
        self.rate_limited = counter("bot_platform_rate_limited", "429s from a platform", "channel")
        self.budget_refusals = counter("bot_budget_refusals", "Model calls refused by a budget", "scope")
        self.errors = counter("bot_run_errors", "Errors recorded in runs", "agent")
        self.partitions_held = gauge("bot_bus_partitions_held", "Bus partitions whose lease this worker holds")
        self.lease_age = gauge(
            "bot_bus_lease_renewal_age_seconds",
            "Since this worker last renewed its leases (lapsing over bus.lease_ms)",
        )
        self.leases_lost = counter("bot_bus_leases_lost", "Partition leases this worker lost while it ran")
        self._lost_seen = 0
        self.job_fires = counter(
            "bot_job_fires", "Job fires: sent, started (an agent run), missed, retried, failed, stopped", "outcome"
        )

    def child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, looked up once (``labels`` takes a lock and builds its key on every call,
        eight times per message); only for counters and histograms, whose children are never removed."""
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found

    def delivered(self, channel: str, kind: str, *, failed: bool = False) -> None:
        """A message went to a platform (or failed to)."""
        if failed:
            self.child(self.send_failures, channel).inc()
        else:
            self.child(self.sent, channel, kind).inc()

    def bounded(self, metric: str, label: str, value: str) -> str:
        """``value``, or ``other`` once ``metric``'s ``label`` has :data:`MAX_VALUES` distinct values."""
        seen = self._seen.get((metric, label))
        if seen is None:
            seen = self._seen[(metric, label)] = set()
        if value in seen:
            return value
        if len(seen) >= MAX_VALUES:
            return OTHER
        seen.add(value)
        return value

    # -- the event stream ------------------------------------------------------------------------

    def observe(self, type: str, agent: str, fields: Mapping[str, Any]) -> None:
        """One trace event (every one, whatever tracing keeps)."""
        get = fields.get
        if type == "route":
            strategy, method = str(get("strategy") or "none"), str(get("method") or "none")
            key = (strategy, method, agent)
            counter = self._route_series.get(key)
            if counter is None:
                counter = self.child(self.routes, strategy, method, self.bounded("routes", "agent", agent or "none"))
                if len(self._route_series) < SERIES_KEPT:
                    self._route_series[key] = counter
            counter.inc()
        elif type == "run":
            status = str(get("status") or "?")
            counter = self._run_series.get((agent, status))
            if counter is None:
                counter = self.child(self.runs, self.bounded("runs", "agent", agent or "?"), status)
                if len(self._run_series) < SERIES_KEPT:
                    self._run_series[(agent, status)] = counter
            counter.inc()
        elif type == "tool_call":
            tool = self.bounded("tools", "tool", str(get("tool") or "?"))
            self.child(self.tool_calls, tool, "error" if get("error") else "ok").inc()
        elif type == "interrupt":
            self.child(self.interrupts, str(get("kind") or "?"), str(get("status") or "?")).inc()
        elif type == "handoff":
            source = self.bounded("handoffs", "source", agent or "?")
            target = self.bounded("handoffs", "target", str(get("target") or "?"))
            self.handoffs.labels(source, target, str(get("status") or "?")).inc()
        elif type == "guardrail":
            self.guardrails.labels(self.bounded("guardrails", "agent", agent or "?"), str(get("status") or "?")).inc()
        elif type == "error":
            self.errors.labels(self.bounded("errors", "agent", agent or "?")).inc()

    # -- measuring points ------------------------------------------------------------------------

    def model_call(self, provider: str, model: str, seconds: float, usage: Any | None, error: bool = False) -> None:
        series = self._model_series.get((provider, model, error))
        if series is None:  # its first call (a model's label is bounded once: it never changes after)
            label = self.bounded("model", "model", model)
            calls = self.child(self.model_calls, provider, label, "error" if error else "ok")
            series = (calls, self.child(self.model_seconds, provider, label), label)
            if len(self._model_series) < SERIES_KEPT:
                self._model_series[(provider, model, error)] = series
        calls, timer, model = series
        calls.inc()
        timer.observe(seconds)
        if usage is not None and (
            usage.input_tokens or usage.output_tokens or usage.thinking_tokens or usage.cached_tokens
        ):
            for kind, count in zip(
                TOKEN_KINDS,
                (usage.input_tokens, usage.output_tokens, usage.thinking_tokens, usage.cached_tokens),
                strict=True,
            ):
                if count:
                    self.child(self.model_tokens, provider, model, kind).inc(count)

    def run_worked(self, agent: str, outcome: str, seconds: float) -> None:
        timer = self._worked_series.get((agent, outcome))
        if timer is None:
            timer = self.child(self.run_seconds, self.bounded("run_seconds", "agent", agent), outcome)
            if len(self._worked_series) < SERIES_KEPT:
                self._worked_series[(agent, outcome)] = timer
        timer.observe(seconds)

    def platform_rate_limited(self, channel: str) -> None:
        self.rate_limited.labels(channel).inc()

    def job_fired(self, outcome: str) -> None:
        self.job_fires.labels(outcome).inc()

    def budget_refused(self, scope: str) -> None:
        self.budget_refusals.labels(scope).inc()

    def apply(self, sample: Sample) -> None:
        """Set the gauges from what a scrape read."""
        self.queue_depth.clear()
        self.queue_age.clear()
        for partition, (depth, age) in sorted(sample.queue.items()):
            self.queue_depth.labels(str(partition)).set(depth)
            self.queue_age.labels(str(partition)).set(round(age, 3))
        self.pending.set(sample.interrupts_pending)
        self.outbox.set(sample.outbox_backlog)
        self.inbox_pending.set(sample.inbox_pending)
        if sample.leases is not None:
            self.partitions_held.set(sample.leases.held)
            self.lease_age.set(round(sample.leases.renewal_age_s, 3))
            if sample.leases.lost > self._lost_seen:
                self.leases_lost.inc(sample.leases.lost - self._lost_seen)
                self._lost_seen = sample.leases.lost
