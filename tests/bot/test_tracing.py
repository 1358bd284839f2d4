"""Tracing: one correlation id across a handoff, an interrupt and a restart; no secrets stored or logged; OTel spans."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents.models.gemini import GeminiModel
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from bot.cli.traces import print_trace, session_events, with_traces
from bot.tracing.recorder import OtelSink, Redactor, TraceEvent, timeline
from bot.tracing.replay import replay, replay_json
from tests.fakes.gemini_server import FakeGemini, call_body, function_call_part, text_body
from tests.helpers.handoffs import AGENTS, toolbox, transfer, write_agents

API_KEY = "AIzaSy-REAL-gemini-key-0123456789"
BOT_TOKEN = "123456:AAF-real-telegram-token-abcdef"


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    return write_agents(tmp_path / "agents", AGENTS)


async def test_one_correlation_id_across_handoff_interrupt_and_restart(
    make_harness: Any, agents_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    tools = toolbox(ran)
    model = ScriptedModel(
        [transfer("fixer", "null check missing", "t1"), call("patch", {"path": "app.py", "change": "guard"}, id="p1")]
    )
    h = await make_harness(model, agents={"dirs": [str(agents_dir)]}, tools=tools)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    h.gateway.tracing.sinks.append(OtelSink(provider))
    await h.say("@debugger crash in app.py")
    await h.gateway.tracing.flush()
    approve = h.payload("Approve")

    await h.restart(ScriptedModel(["Patched."]), tools)
    await h.send(h.press(approve))
    assert ran == ["patch app.py"]

    (events,) = await h.gateway.tracing.runs(str(h.chat()))
    assert {e.correlation_id for e in events} == {"console:m1"}
    kinds = [(e.type, e.data.get("status")) for e in events]
    assert kinds == [
        ("route", None),
        ("llm_call", None),
        ("handoff", "accepted"),
        ("llm_call", None),
        ("interrupt", "raised"),
        ("interrupt", "resolved"),
        ("tool_call", None),
        ("llm_call", None),
        ("run", "done"),
    ]
    assert [e.agent for e in events] == ["debugger", "debugger", "debugger", *["fixer"] * 6]
    tool_event = next(e for e in events if e.type == "tool_call")
    assert tool_event.data["tool"] == "patch" and tool_event.data["arguments"] == {"path": "app.py", "change": "guard"}
    assert events[5].data["by"] == "u1" and events[5].data["choice"] == "a"

    shown = (await h.say("/trace"))[0]
    assert "🔀 debugger → fixer: null check missing" in shown and "Chain: debugger → fixer" in shown
    assert "⏸ tool_confirm raised" in shown and "🔧 fixer: patch" in shown

    # Spans before the restart went to the first gateway's exporter: one trace id for the request.
    spans = exporter.get_finished_spans()
    assert {s.context.trace_id for s in spans} == {spans[0].context.trace_id}
    chat_spans = [s for s in spans if s.name == "chat scripted"]
    assert chat_spans and chat_spans[0].attributes is not None, [s.name for s in spans]
    assert chat_spans[0].attributes["gen_ai.operation.name"] == "chat"
    assert chat_spans[0].attributes["gen_ai.agent.name"] == "debugger"
    assert any(s.name == "handoff debugger → fixer" for s in spans)

    # bot trace CHAT_KEY --json, against the same database.
    await h.gateway.tracing.flush()
    assert await print_trace(h.gateway.settings, str(h.chat()), 2, as_json=True) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 9  # commands such as /trace are not traced
    assert await print_trace(h.gateway.settings, "console:nobody", 1, as_json=False) == 1

    # bot agents replay: the last request of the chat, step by step, with totals.
    events = await with_traces(h.gateway.settings, lambda tracing: session_events(tracing, str(h.chat())))
    assert events is not None and events[0].correlation_id == events[-1].correlation_id
    same = await with_traces(h.gateway.settings, lambda tracing: session_events(tracing, events[0].correlation_id))
    assert same == events, "by correlation id too"
    shown = replay(events)
    assert "🔀 debugger → fixer: null check missing" in shown
    assert '{"path": "app.py", "change": "guard"}' in shown, "a tool call with its arguments"
    assert "Agents: debugger → fixer" in shown and "Status: done after" in shown
    assert "Model: 3 calls" in shown and "Tools: 1 tool calls (0 failed" in shown and "1 handoffs" in shown
    assert replay_json(events)["totals"]["model_calls"] == 3


async def test_secrets_never_stored_or_logged(
    make_harness: Any,
    gemini_server: FakeGemini,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    @tool(risk="safe")
    async def login(user: str, api_key: str) -> str:
        """Log in to a service."""
        return f"logged in {user}"

    gemini_server.reply(
        call_body(function_call_part("login", {"user": "bob", "api_key": "sk-user-typed-9999"}, id="c1"))
    )
    gemini_server.reply(text_body("Logged in."))
    model = GeminiModel(model="gemini-test", api_key=API_KEY, base_url=gemini_server.base_url, max_retries=0)
    h = await make_harness(
        model,
        tools=[login],
        model={"api_key": API_KEY, "base_url": gemini_server.base_url},
        channels={"telegram": {"token": BOT_TOKEN}},
    )
    assert (await h.say("@react log me in"))[-1] == "Logged in."
    (events,) = await h.gateway.tracing.runs(str(h.chat()))
    login_event = next(e for e in events if e.type == "tool_call")
    assert login_event.data["arguments"] == {"user": "bob", "api_key": "‹redacted: API key›"}
    assert (await h.say("/whoami"))[0].startswith("You are u1")
    await h.gateway.stop(timeout=5)
    # The request really carried the key (so the test would notice a leak).
    assert gemini_server.requests[0].headers.get("x-goog-api-key") == API_KEY
    files = list((tmp_path / "data").rglob("*"))
    assert any(f.suffix == ".db" or f.name.endswith(".sqlite3") or "bot" in f.name for f in files)
    for f in files:
        if f.is_file():
            blob = f.read_bytes()
            assert API_KEY.encode() not in blob and BOT_TOKEN.encode() not in blob, f
    logs = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    assert API_KEY not in logs and BOT_TOKEN not in logs
    await h.gateway.start()  # the harness stops it again at teardown


def test_redactor() -> None:
    r = Redactor(["supersecretvalue", "short"])
    assert r.value({"Authorization": "Bearer x", "q": "a supersecretvalue b", "n": 3, "short": "short"}) == {
        "Authorization": "‹redacted: authorization›",
        "q": "a ‹redacted: secret› b",
        "n": 3,
        "short": "short",
    }
    assert r.value(["supersecretvalue"]) == ["‹redacted: secret›"]


def test_timeline_of_nothing() -> None:
    assert "No trace" in timeline([])
    event = TraceEvent("error", "console:c", "console:m1", agent="react", data={"message": "model error: boom"})
    assert "⚠️ react: model error: boom" in timeline([event])


async def test_sample_rate_and_event_kinds_choose_what_is_kept(make_harness: Any, scripted: Any) -> None:
    h = await make_harness(scripted("one", "two"), tracing={"events": ["route", "run"]})
    await h.say("hello")
    await h.gateway.tracing.flush()
    [events] = await h.gateway.tracing.runs(str(h.chat()))
    assert [e.type for e in events] == ["route", "run"], "no llm_call: not in tracing.events"

    h.gateway.settings.tracing.events = []
    h.gateway.settings.tracing.sample_rate = 0.0
    h.gateway.tracing.record("error", "console:c9", "corr-1", message="kept whatever the rate")
    await h.say("hello again", chat=h.chat("c2"))
    await h.gateway.tracing.flush()
    assert await h.gateway.tracing.runs("console:c2") == []
    assert [e.type for e in (await h.gateway.tracing.runs("console:c9"))[0]] == ["error"]

    h.gateway.settings.tracing.sample_rate = 0.25
    kept = [f"corr-{n}" for n in range(2000) if h.gateway.tracing.keeps("llm_call", f"corr-{n}")]
    assert 400 < len(kept) < 600, "about a quarter of the requests"
    assert all(h.gateway.tracing.keeps("run", c) for c in kept), "a request is traced whole or not at all"


async def test_an_agent_file_narrows_what_of_its_work_is_traced(
    make_harness: Any, scripted: Any, tmp_path: Path
) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "quiet.md").write_text("---\nname: quiet\nrunner: chat\ntracing: {events: [memory]}\n---\nShh.\n")
    (agents / "silent.md").write_text("---\nname: silent\nrunner: chat\ntracing: {enabled: false}\n---\nShh.\n")
    h = await make_harness(scripted("one", "two"), agents={"dirs": [str(agents)]})
    await h.say("@quiet hello")
    await h.say("@silent hello", chat=h.chat("c2"))
    await h.gateway.tracing.flush()
    [quiet] = await h.gateway.tracing.runs(str(h.chat()))
    assert "llm_call" not in [e.type for e in quiet] and {"route", "run"} <= {e.type for e in quiet}
    [silent] = await h.gateway.tracing.runs("console:c2")
    assert [e.type for e in silent] == ["route", "run"], "the run's own events stay; the agent's work is not kept"
