"""The ReAct runner: tool calls, parallel calls, errors fed back, the cap, confirmation, the ledger."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.approval import approval_required
from agents.context import RunContext
from agents.messages import Message, unanswered_calls
from agents.models.scripted import ScriptedModel, call, calls
from agents.react import DENIED, LIMIT_NOTE, ReactRunner
from agents.resolutions import Answer, ToolDecision
from agents.results import FinalAnswer, InterruptRequest
from agents.tools.base import Tool, ToolError, select_tools, tool
from agents.tools.ledger import MemoryLedger


def assert_paired(messages: tuple[Message, ...] | list[Message]) -> None:
    """Every tool call has exactly one result, and every result answers a call."""
    call_ids = [c.id for m in messages for c in m.tool_calls]
    result_ids = [r.call_id for m in messages for r in m.tool_results]
    assert sorted(call_ids) == sorted(result_ids), (call_ids, result_ids)
    assert len(set(call_ids)) == len(call_ids)


class Counter:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []


def make_tools(counter: Counter, together: int = 0) -> list[Tool]:
    """``together``: each ``get_time`` call waits until that many are in flight at once (run one after the
    other, the first would wait for ever: the test's timeout says so)."""
    in_flight: list[str] = []
    all_in = asyncio.Event()

    @tool(risk="safe")
    async def get_time(timezone: str = "UTC") -> str:
        """Current time."""
        counter.calls.append({"get_time": timezone})
        in_flight.append(timezone)
        if len(in_flight) >= together:
            all_in.set()
        await all_in.wait()
        return f"12:00 {timezone}"

    @tool(risk="medium")
    async def write_note(text: str) -> str:
        """Write a note."""
        counter.calls.append({"write_note": text})
        return "written"

    @tool(risk="high")
    async def delete_cache(path: str) -> str:
        """Delete a cache dir."""
        counter.calls.append({"delete_cache": path})
        return f"deleted {path}"

    @tool(risk="low")
    async def broken() -> str:
        """Always fails."""
        raise ToolError("the disk is on fire")

    @tool(risk="low")
    async def buggy() -> str:
        """Has a bug."""
        raise ZeroDivisionError("division by zero")

    return [get_time, write_note, delete_cache, broken, buggy]


def ctx_for(model: ScriptedModel, tools: list[Tool], ledger: MemoryLedger | None = None) -> RunContext:
    return RunContext(
        chat_key="t:1", model=model, toolset=approval_required(tools), ledger=ledger or MemoryLedger(), run_id="run-1"
    )


async def test_a_tool_call_then_answer() -> None:
    counter = Counter()
    model = ScriptedModel([call("get_time", {"timezone": "Europe/Paris"}, id="c1"), "It is noon in Paris."])
    result = await ReactRunner().run(ctx_for(model, make_tools(counter)), Message.user("time in Paris?"))
    assert isinstance(result, FinalAnswer) and result.text == "It is noon in Paris."
    assert counter.calls == [{"get_time": "Europe/Paris"}]
    second = model.requests[1]
    assert second.messages[-1].tool_results[0].content == "12:00 Europe/Paris"
    assert second.messages[-1].tool_results[0].call_id == "c1"
    assert {t.name for t in model.requests[0].tools} >= {"get_time", "write_note"}
    assert_paired(result.messages)
    model.assert_complete()


async def test_parallel_safe_calls_run_concurrently() -> None:
    counter = Counter()
    model = ScriptedModel(
        [calls(("get_time", {"timezone": "UTC"}, "a"), ("get_time", {"timezone": "Asia/Tokyo"}, "b")), "done"]
    )
    runner = ReactRunner()
    # Each call waits until both are in flight: they finish only if the runner runs them side by side.
    result = await runner.run(ctx_for(model, make_tools(counter, together=2)), Message.user("two times"))
    results = model.requests[1].messages[-1].tool_results
    assert [r.call_id for r in results] == ["a", "b"]
    assert isinstance(result, FinalAnswer)
    assert_paired(result.messages)
    model.assert_complete()


async def test_tool_errors_are_fed_back() -> None:
    model = ScriptedModel([calls(("broken", {}, "x"), ("buggy", {}, "y"), ("nope", {}, "z")), "sorry"])
    result = await ReactRunner().run(ctx_for(model, make_tools(Counter())), Message.user("try"))
    results = {r.call_id: r for r in model.requests[1].messages[-1].tool_results}
    assert results["x"].is_error and results["x"].content == "the disk is on fire"
    assert results["y"].is_error and "ZeroDivisionError" in results["y"].content
    assert results["z"].is_error and "unknown tool" in results["z"].content
    assert isinstance(result, FinalAnswer)
    assert_paired(result.messages)
    model.assert_complete()


async def test_invalid_arguments_are_a_tool_error() -> None:
    model = ScriptedModel([call("write_note", {"wrong": 1}, id="w"), "fixed"])
    await ReactRunner().run(ctx_for(model, make_tools(Counter())), Message.user("note"))
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and "invalid arguments for write_note" in result.content
    model.assert_complete()


async def test_iteration_cap_gives_an_honest_answer() -> None:
    steps: list[Any] = [call("get_time", {}, id=f"c{i}") for i in range(3)]
    model = ScriptedModel([*steps, "I could not finish: the clock kept ticking."])
    result = await ReactRunner(max_iterations=3).run(ctx_for(model, make_tools(Counter())), Message.user("loop"))
    assert isinstance(result, FinalAnswer) and "could not finish" in result.text
    last = model.requests[-1]
    assert last.tools == () and LIMIT_NOTE in (last.system or "")
    assert_paired(result.messages)
    model.assert_complete()


async def test_risky_call_pauses_before_running_and_resume_runs_it_once() -> None:
    counter = Counter()
    ledger = MemoryLedger()
    tools = make_tools(counter)
    model = ScriptedModel(
        [calls(("get_time", {}, "t"), ("delete_cache", {"path": "/tmp/c"}, "d")), "Cache deleted at noon."]
    )
    runner = ReactRunner()
    paused = await runner.run(ctx_for(model, tools, ledger), Message.user("delete the build cache"))
    assert isinstance(paused, InterruptRequest) and paused.kind == "tool_confirm"
    assert 'delete_cache(path="/tmp/c")' in paused.prompt
    assert counter.calls == [{"get_time": "UTC"}], "the safe call ran, the risky one waits"
    assert [c["id"] for c in paused.payload["calls"]] == ["d"]
    # The state is JSON: resume from a copy, as after a restart.
    import json

    state = json.loads(json.dumps(paused.state))
    done = await runner.resume(ctx_for(model, tools, ledger), state, ToolDecision(approved=("d",)))
    assert isinstance(done, FinalAnswer) and done.text == "Cache deleted at noon."
    assert counter.calls == [{"get_time": "UTC"}, {"delete_cache": "/tmp/c"}]
    assert_paired(done.messages)
    assert unanswered_calls(done.messages) == []
    # Resuming the same state again (a double resume) reuses ledger results: nothing runs twice.
    model.add("again")
    await runner.resume(ctx_for(model, tools, ledger), state, ToolDecision(approved=("d",)))
    assert counter.calls.count({"delete_cache": "/tmp/c"}) == 1
    model.assert_complete()


async def test_denied_call_gets_a_denied_result() -> None:
    counter = Counter()
    tools = make_tools(counter)
    model = ScriptedModel([call("delete_cache", {"path": "/"}, id="d"), "Understood, I did not delete it."])
    runner = ReactRunner()
    paused = await runner.run(ctx_for(model, tools), Message.user("delete everything"))
    assert isinstance(paused, InterruptRequest)
    done = await runner.resume(ctx_for(model, tools), paused.state, ToolDecision())
    assert counter.calls == []
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and result.content == DENIED
    assert isinstance(done, FinalAnswer)
    assert_paired(done.messages)
    model.assert_complete()


async def test_risky_call_started_without_result_is_not_retried() -> None:
    counter = Counter()
    tools = make_tools(counter)
    ledger = MemoryLedger()
    model = ScriptedModel([call("delete_cache", {"path": "/c"}, id="d"), "It may have run."])
    runner = ReactRunner()
    paused = await runner.run(ctx_for(model, tools, ledger), Message.user("delete"))
    assert isinstance(paused, InterruptRequest)
    # The process died after recording the start, before the result.
    await ledger.started("run-1", paused.messages[-1].tool_calls[0])
    notices: list[str] = []

    async def emit(text: str) -> None:
        notices.append(text)

    ctx = ctx_for(model, tools, ledger)
    ctx.emit = emit
    done = await runner.resume(ctx, paused.state, ToolDecision(approved=("d",)))
    assert counter.calls == []
    assert "not retried" in model.requests[1].messages[-1].tool_results[0].content
    assert notices and "not retried" in notices[0]
    assert isinstance(done, FinalAnswer)
    model.assert_complete()


def test_allow_deny_selection() -> None:
    tools = make_tools(Counter())
    names = lambda ts: sorted(t.name for t in ts)  # noqa: E731
    assert names(select_tools(tools, None)) == ["broken", "buggy", "get_time", "write_note"]
    assert names(select_tools(tools, ["get_*", "delete_cache"])) == ["delete_cache", "get_time"]
    assert names(select_tools(tools, ["*"], deny=["delete_*", "buggy"])) == ["broken", "get_time", "write_note"]


async def test_ask_user_pauses_and_the_answer_is_the_result() -> None:
    from agents.react import ASK_USER_TOOL

    model = ScriptedModel(
        [call("ask_user", {"question": "Which city?", "choices": ["Paris", "Rome"]}, id="q"), "Rome it is."]
    )
    runner = ReactRunner()
    paused = await runner.run(ctx_for(model, [ASK_USER_TOOL]), Message.user("plan a trip"))
    assert isinstance(paused, InterruptRequest) and paused.kind == "ask_user"
    assert paused.prompt == "❓ Which city?" and [c.label for c in paused.choices] == ["Paris", "Rome"]
    done = await runner.resume(ctx_for(model, [ASK_USER_TOOL]), paused.state, Answer(text="Rome", choice="c1"))
    assert isinstance(done, FinalAnswer) and done.text == "Rome it is."
    assert model.requests[1].messages[-1].tool_results[0].content == "Rome"
    assert_paired(done.messages)
    model.assert_complete()


async def test_ask_user_mixed_with_a_confirmation_is_refused() -> None:
    from agents.react import ASK_USER_TOOL

    counter = Counter()
    tools = [*make_tools(counter), ASK_USER_TOOL]
    model = ScriptedModel([calls(("ask_user", {"question": "sure?"}, "q"), ("delete_cache", {"path": "/"}, "d")), "ok"])
    result = await ReactRunner().run(ctx_for(model, tools), Message.user("x"))
    assert isinstance(result, FinalAnswer) and counter.calls == []
    assert all(r.is_error for r in model.requests[1].messages[-1].tool_results)
    model.assert_complete()
