"""Tracing's buffering, redaction and reading on the in-memory trace repository (``tests/fakes/repos.py``): what
reaches the rows, in how many commits, and how requests are read back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.clock import FakeClock
from bot.config.settings import TracingSection
from bot.tracing.recorder import Redactor, TraceEvent, Tracing
from tests.fakes.repos import FakeTraces

KEY = "sk-test-0123456789abcdef"


async def test_events_are_buffered_redacted_and_written_in_one_commit() -> None:
    traces = FakeTraces()
    tracing = Tracing(traces, TracingSection(retention_days=3), Redactor([KEY]), clock=FakeClock())
    await tracing.start()
    try:
        assert traces.kept_days == 3, "retention is the repository's"
        tracing.record("route", "console:a", "q1", agent="chat", target="chat", confidence=100)
        tracing.record("llm_call", "console:a", "q1", run_id="r1", agent="chat", prompt=f"key {KEY}", tokens=7)
        assert traces.rows == [], "nothing written on the per-message path"
        assert await tracing.flush() == 2 and traces.commits == 1
        assert await tracing.flush() == 0 and traces.commits == 1, "an empty buffer commits nothing"
    finally:
        await tracing.stop()
    route, call = traces.rows
    assert (route[1], route[2], route[5]) == ("console:a", "q1", "route")
    assert KEY not in call[6] and "‹redacted: secret›" in call[6] and '"tokens": 7' in call[6]


async def test_a_chats_last_requests_are_read_back_in_order() -> None:
    traces = FakeTraces()
    tracing = Tracing(traces, TracingSection(), Redactor(), clock=FakeClock())
    for request in ("q1", "q2", "q3"):
        tracing.record("route", "console:a", request, agent="chat")
        tracing.record("run", "console:a", request, agent="chat", status="done")
    tracing.record("route", "console:b", "q9", agent="chat")
    runs = await tracing.runs("console:a", last=2)  # flushes first
    assert [[(e.correlation_id, e.type) for e in run] for run in runs] == [
        [("q2", "route"), ("q2", "run")],
        [("q3", "route"), ("q3", "run")],
    ]
    [event] = await tracing.events("q9")
    assert event.chat_key == "console:b" and event.data == {}


async def test_nothing_is_kept_when_tracing_is_off() -> None:
    traces = FakeTraces()
    tracing = Tracing(traces, TracingSection(enabled=False), Redactor(), clock=FakeClock())
    await tracing.start()
    tracing.record("route", "console:a", "q1", agent="chat")
    await tracing.stop()
    assert traces.rows == [] and traces.kept_days is None


async def test_a_flush_returns_only_once_a_flush_already_writing_is_written() -> None:
    """A reader flushes, then reads: the background flusher's write in flight must be in what it reads."""

    class SlowTraces(FakeTraces):
        def __init__(self) -> None:
            super().__init__()
            self.release = asyncio.Event()
            self.writing = asyncio.Event()

        async def add(self, rows: Sequence[Any]) -> None:
            self.writing.set()
            await self.release.wait()
            await super().add(rows)

    traces = SlowTraces()
    tracing = Tracing(traces, TracingSection(), Redactor(), clock=FakeClock())
    tracing.record("route", "console:a", "q1", agent="chat")
    background = asyncio.create_task(tracing.flush())  # took the buffer, its write not committed yet
    await traces.writing.wait()
    reader = asyncio.create_task(tracing.flush())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not reader.done(), "the reader's flush came back before the write in flight was committed"
    traces.release.set()
    assert await background == 1 and await reader == 0
    assert [row[5] for row in traces.rows] == ["route"]


async def test_fields_are_stored_as_json_with_what_json_cannot_say_as_text() -> None:
    """The stored ``data`` is exactly ``json.dumps(fields, ensure_ascii=False, default=str)`` of the redacted
    fields; the sinks see the same events as the rows."""

    class Sink:
        def __init__(self) -> None:
            self.events: list[TraceEvent] = []

        def export(self, events: Sequence[TraceEvent]) -> None:
            self.events.extend(events)

        def shutdown(self) -> None:
            pass

    traces, sink = FakeTraces(), Sink()
    tracing = Tracing(traces, TracingSection(), Redactor([KEY]), sinks=[sink], clock=FakeClock())
    when = datetime(2026, 1, 2, 3, 4, 5)
    fields: dict[str, Any] = {
        "text": 'héllo « ☃ » \u200b "quoted" \\ \n',
        "ratio": 0.1,
        "big": 10**20,
        "nan": float("nan"),
        "when": when,
        "nested": {"list": [1, "two", None, True], "empty": {}},
        "tuple": ("a", 1),
        "prompt": f"key {KEY}",
    }
    tracing.record("tool_call", "console:a", "q1", run_id="r1", agent="chat", **fields)
    tracing.record("run", "console:a", "q1", run_id="r1", agent="chat", status="done")
    assert await tracing.flush() == 2
    tool, run = traces.rows
    redacted = {**fields, "when": str(when), "tuple": ["a", 1], "prompt": "key ‹redacted: secret›"}
    assert tool[6] == json.dumps(redacted, ensure_ascii=False, default=str)
    assert run[6] == '{"status": "done"}'
    assert [(e.id, e.chat_key, e.correlation_id, e.run_id, e.agent, e.type, e.at) for e in sink.events] == [
        (r[0], r[1], r[2], r[3], r[4], r[5], r[7]) for r in traces.rows
    ]
    assert sink.events[1].data == {"status": "done"} and isinstance(tool[7], datetime)
