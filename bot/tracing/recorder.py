"""Tracing: every decision of a run, stored, shown in chat (``/trace``) and the CLI, optionally to OpenTelemetry.

Events: ``route``, ``llm_call``, ``tool_call``, ``handoff``, ``guardrail``,
``interrupt`` (raised / resolved / expired / cancelled / superseded), ``error``
and ``run`` (the end of a run).  Each has an event id, the chat key, the agent,
the correlation id (one per inbound message, kept across a resume, even after
a restart) and a timestamp.

Writes are buffered: :meth:`Tracing.record` only appends to a list, and a
background task writes the list in one group commit every ``flush_interval_s``
(and at stop), so tracing adds no commit to the per-message path.  Secrets are
redacted before anything is kept, and again when events are read (rows kept before
the redaction step knew a kind of secret): the configured secret values, values
under names that look like secrets, and what the detector ``remember`` refuses
with recognises (:mod:`bot.redaction`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import zlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Protocol

from bot.aio import cancel_and_wait
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import TracingSection
from bot.ids import fast_id
from bot.redaction import Redaction
from bot.store.ports import TraceRepo
from bot.store.values import utcnow
from bot.tracing.event import TraceEvent
from bot.tracing.timeline import describe, human_duration, timeline

log = logging.getLogger(__name__)

__all__ = ["Redactor", "RunTracer", "Sink", "TraceEvent", "Tracing", "describe", "human_duration", "timeline"]

MAX_FIELD_CHARS = 2000
_data_json = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""An event's fields as stored (what :func:`_encoder` makes, without the C encoder)."""


def _encoder() -> Callable[[Any, int], Sequence[str]]:
    """What :data:`_data_json` does, for one flush: ``encode(data, 0)`` gives the chunks of the same text.
    ``JSONEncoder.encode`` builds a new C encoder for every call; one made per flush is quicker (see
    bench/README.md)."""
    if c_make_encoder is None:  # pragma: no cover - CPython has it
        return lambda data, _level: (_data_json(data),)
    return c_make_encoder({}, str, encode_basestring, None, ": ", ", ", False, False, True)


def _time(at: datetime | str) -> datetime:
    return at if isinstance(at, datetime) else datetime.fromisoformat(at)


class Redactor(Redaction):
    """The tracer's :class:`~bot.redaction.Redaction`: every secret replaced, and long strings cut short."""

    limit = MAX_FIELD_CHARS


Observer = Callable[[str, str, Mapping[str, Any]], None]
"""Told every event: its type, agent and fields."""


class Sink(Protocol):
    """Receives flushed events (OpenTelemetry)."""

    def export(self, events: Sequence[TraceEvent]) -> None: ...

    def shutdown(self) -> None: ...


def _whole(policy: Any) -> bool:
    """``policy`` keeps every event of every request."""
    return bool(getattr(policy, "enabled", True) and not policy.events and policy.sample_rate >= 1)


def _kept(policy: Any, type: str, correlation_id: str) -> bool:
    """``policy`` (``tracing`` of the configuration or of an agent file) keeps an event of ``type`` in this
    request: on, of a kind it lists (or it lists none), and the request in its sample (a hash of the
    correlation id, so every event of a request, in every process, gets the same answer)."""
    if not getattr(policy, "enabled", True) or (policy.events and type not in policy.events):
        return False
    rate = policy.sample_rate
    return bool(rate >= 1 or zlib.crc32(correlation_id.encode()) % 10_000 < rate * 10_000)


class RunTracer:
    """The :class:`agents.context.Tracer` of one run: events carry the run's keys."""

    def __init__(
        self, tracing: Tracing, chat_key: str, correlation_id: str, run_id: str, agent: str, policy: Any = None
    ) -> None:
        self.tracing = tracing
        self.chat_key, self.correlation_id, self.run_id, self.agent = chat_key, correlation_id, run_id, agent
        self.policy = policy
        """The agent file's ``tracing`` block (``enabled``, ``sample_rate``, ``events``: a frozen
        :class:`~agents.specs.model.TracingPolicy`); None: no narrowing."""
        self._narrows = policy is not None and not _whole(policy)

    def event(self, type: str, **fields: Any) -> None:
        agent = str(fields.pop("agent", None) or self.agent)
        tracing = self.tracing
        if tracing.observer is not None:
            tracing.observer(type, agent, fields)
        if self._narrows and type != "error" and not _kept(self.policy, type, self.correlation_id):
            return
        tracing.keep(type, self.chat_key, self.correlation_id, self.run_id, agent, fields)


class Tracing:
    """Buffers trace events and writes them in batches; reads them back for ``/trace`` and ``bot trace``."""

    def __init__(
        self,
        traces: TraceRepo,
        config: TracingSection,
        redactor: Redactor | None = None,
        sinks: Sequence[Sink] = (),
        observer: Observer | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``observer``: sees every event, before ``tracing.enabled`` and sampling decide what is kept (metrics);
        ``clock``: paces the flushes."""
        self.traces = traces
        self.clock = clock
        self.observer = observer
        self.config = config
        self.redactor = redactor or Redactor()
        self.sinks = list(sinks)
        self._buffer: list[tuple[Any, ...]] = []
        """Rows as :meth:`_flush` writes them, with the fields not yet JSON: ``id, chat_key, correlation_id,
        run_id, agent, type, data, at``."""
        self._now: Callable[[], datetime | str] = getattr(traces, "stamp", utcnow)
        """The time of an event as the repository takes it best (:attr:`SqlTraces.stamp
        <bot.store.sql.repos.traces.SqlTraces.stamp>`: the text SQLite stores), a naive UTC ``datetime`` by default."""
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._flushing = asyncio.Lock()
        self.written = 0

    # -- recording -------------------------------------------------------------------------------

    def tracer(self, chat_key: str, correlation_id: str, run_id: str, agent: str, policy: Any = None) -> RunTracer:
        """The tracer of one agent's part of a run (``policy``: its agent file's ``tracing`` block)."""
        return RunTracer(self, chat_key, correlation_id, run_id, agent, policy)

    def record(
        self, type: str, chat_key: str, correlation_id: str, *, run_id: str = "", agent: str = "", **fields: Any
    ) -> None:
        if self.observer is not None:
            self.observer(type, agent, fields)
        self.keep(type, chat_key, correlation_id, run_id, agent, fields)

    def keep(
        self, type: str, chat_key: str, correlation_id: str, run_id: str, agent: str, fields: dict[str, Any]
    ) -> None:
        """Buffer the event, if tracing is on and keeps it: as the row it will be (a tuple, not yet a
        :class:`TraceEvent`: the sinks get those at the flush, when there are sinks)."""
        config = self.config
        if not config.enabled or (
            type != "error" and (config.events or config.sample_rate < 1) and not _kept(config, type, correlation_id)
        ):
            return
        buffer = self._buffer
        buffer.append(
            (fast_id(), chat_key, correlation_id, run_id, agent, type, self.redactor.fields(fields), self._now())
        )
        if len(buffer) >= config.max_buffer:
            self._wake.set()

    def keeps(self, type: str, correlation_id: str) -> bool:
        """``tracing.events`` lets ``type`` through, and ``tracing.sample_rate`` takes this request (by a hash
        of its correlation id: every event of a request, in every process, gets the same answer)."""
        return _kept(self.config, type, correlation_id)

    # -- writing ---------------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.config.enabled:
            return
        self.traces.keep_days(self.config.retention_days)
        self._task = asyncio.create_task(self._flusher(), name="trace-flusher")

    async def _flusher(self) -> None:
        while True:
            await self.clock.wait(self._wake, self.config.flush_interval_s)
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("tracing: could not write trace events (they are dropped, the bot goes on)")

    async def flush(self) -> int:
        """Write what is buffered (one group commit) and hand it to the sinks; returns once every event recorded
        before the call is written (a flush already writing, the background one's, is waited for: a reader that
        flushes first then sees every event)."""
        async with self._flushing:
            return await self._flush()

    async def _flush(self) -> int:
        buffered, self._buffer = self._buffer, []
        if not buffered:
            return 0
        encode, join = _encoder(), "".join
        rows = [(i, c, q, r, a, t, join(encode(d, 0)), at) for i, c, q, r, a, t, d, at in buffered]
        await self.traces.add(rows)
        self.written += len(buffered)
        if self.sinks:
            events = [TraceEvent(t, c, q, r, a, d, _time(at), i) for i, c, q, r, a, t, d, at in buffered]
            for sink in self.sinks:
                try:
                    sink.export(events)
                except Exception:
                    log.exception("tracing: exporter %s failed", type(sink).__name__)
        return len(buffered)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        try:
            # What is buffered now, without waiting for a reader's flush that may still be writing (stopping must
            # not hang on it; the store commits it before it closes).
            await self._flush()
        except Exception:
            log.exception("tracing: could not write the last trace events")
        for sink in self.sinks:
            sink.shutdown()

    # -- reading ---------------------------------------------------------------------------------

    async def runs(self, chat_key: str, last: int = 1) -> list[list[TraceEvent]]:
        """The events of the chat's last ``last`` requests (by correlation id), oldest request first."""
        await self.flush()
        return [
            await self.events(correlation_id, chat_key) for correlation_id in await self.traces.requests(chat_key, last)
        ]

    async def events(self, correlation_id: str, chat_key: str | None = None) -> list[TraceEvent]:
        """The events of one request, in the order they happened (``chat_key`` makes it an index lookup)."""
        rows = await self.traces.events(correlation_id, chat_key)
        return [
            TraceEvent(
                id=r[0],
                chat_key=r[1],
                correlation_id=r[2],
                run_id=r[3] or "",
                agent=r[4] or "",
                type=r[5],
                data=self.redactor.value(json.loads(r[6] or "{}")),
                at=r[7] if isinstance(r[7], datetime) else datetime.fromisoformat(str(r[7])),
            )
            for r in rows
        ]


# -- OpenTelemetry -----------------------------------------------------------------------------------


def _ids(correlation_id: str) -> tuple[int, int]:
    digest = hashlib.sha256(correlation_id.encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


class OtelSink:
    """Turns events into spans; all spans of one request share a trace id derived from its correlation id.

    Model calls follow the GenAI semantic conventions (``chat {model}``,
    ``gen_ai.*`` attributes); tools are ``execute_tool {name}``.
    """

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("supervisor-bot")

    @classmethod
    def from_config(cls, config: TracingSection) -> OtelSink | None:
        if not config.otel.enabled:
            return None
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            log.warning("tracing.otel.enabled is set but opentelemetry-sdk is not installed; spans are off")
            return None
        provider = TracerProvider(resource=Resource.create({"service.name": config.otel.service_name}))
        if config.otel.endpoint:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError:
                log.warning("tracing.otel.endpoint is set but opentelemetry-exporter-otlp-proto-http is not installed")
                return None
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=config.otel.endpoint)))
        return cls(provider)

    def export(self, events: Sequence[TraceEvent]) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

        for event in events:
            trace_id, span_id = _ids(event.correlation_id)
            parent = trace.set_span_in_context(
                NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1)))
            )
            name, attributes = self._shape(event)
            end = int(event.at.timestamp() * 1e9)
            start = end - int(float(event.data.get("duration_ms", 0)) * 1e6)
            span = self.tracer.start_span(name, context=parent, start_time=start, attributes=attributes)
            if event.data.get("error") or event.type == "error":
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(event.data.get("error") or "")[:200]))
            span.end(end_time=end)

    @staticmethod
    def _shape(event: TraceEvent) -> tuple[str, dict[str, Any]]:
        d = event.data
        attributes: dict[str, Any] = {
            "bot.event_id": event.id,
            "bot.chat_key": event.chat_key,
            "bot.correlation_id": event.correlation_id,
            "bot.run_id": event.run_id,
            "gen_ai.agent.name": event.agent,
        }
        if event.type == "llm_call":
            model = str(d.get("model", ""))
            attributes.update(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": model,
                    "gen_ai.usage.input_tokens": int(d.get("input_tokens", 0)),
                    "gen_ai.usage.output_tokens": int(d.get("output_tokens", 0)),
                }
            )
            return f"chat {model}", attributes
        if event.type == "tool_call":
            attributes.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": str(d.get("tool", ""))})
            return f"execute_tool {d.get('tool', '')}", attributes
        if event.type == "handoff":
            attributes.update(
                {"bot.handoff.target": str(d.get("target", "")), "bot.handoff.status": str(d.get("status"))}
            )
            return f"handoff {event.agent} → {d.get('target', '')}", attributes
        for key, value in d.items():
            if isinstance(value, (str, int, float, bool)):
                attributes[f"bot.{event.type}.{key}"] = value
        return event.type, attributes

    def shutdown(self) -> None:
        self.provider.shutdown()
