"""Calling one tool in a run: through the run's ledger (nothing runs twice across restarts), traced.

The approval toolset (:class:`agents.approval.ApprovalRequiredToolset`) calls a tool through
:func:`run_call` once its rule let the call through; a runner calls tools through the toolset, never here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agents.messages import ToolCall, ToolResult
from agents.tools.base import RISK_ORDER, Tool, ToolContext, ToolError
from agents.tools.ledger import ToolLedger
from agents.visible import visible_json

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 20_000
TRACE_RESULT_CHARS = 1_000
"""How much of a tool's result its trace event keeps."""


class _Events(Protocol):
    def event(self, type: str, **fields: Any) -> None: ...


class CallSite(Protocol):
    """What calling a tool uses of a run (an :class:`agents.context.RunContext` is one)."""

    @property
    def chat_key(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def ledger(self) -> ToolLedger: ...
    @property
    def tracer(self) -> _Events: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def emit(self) -> Callable[[str], Awaitable[None]]: ...


def describe_call(call: ToolCall, limit: int | None = 300) -> str:
    """``name(arg=value, ...)``: in full for a confirmation prompt (``limit=None``), shortened for progress lines.

    Values are JSON with everything that could hide part of them made visible: control
    and invisible characters as ``\\uXXXX``, a long run of spaces as ``⟨320 spaces⟩``, so
    what a person approves is exactly what runs.
    """
    args = ", ".join(f"{k}={visible_json(v)}" for k, v in call.args.items())
    text = f"{call.name}({args})"
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _clip(content: Any) -> Any:
    if isinstance(content, str) and len(content) > MAX_RESULT_CHARS:
        return content[:MAX_RESULT_CHARS] + f"\n… [truncated, {len(content)} characters in all]"
    return content


async def run_call(site: CallSite, call: ToolCall, tool: Tool | None, agent: str) -> ToolResult:
    """Run ``call`` with ``tool`` (None: not one of the run's tools) for ``agent``, unless the ledger has it."""
    entry = await site.ledger.get(site.run_id, call)
    if entry is not None and entry.result is not None:
        # Ran before (a resumed or re-run run): its result, under this call's id.
        return entry.result.model_copy(update={"call_id": call.id})
    if tool is None:
        return ToolResult(call_id=call.id, name=call.name, content=f"unknown tool {call.name!r}", is_error=True)
    if entry is not None and RISK_ORDER[tool.risk] > 0:
        # Started but never finished: the process died during it. It may have taken effect.
        result = ToolResult(
            call_id=call.id,
            name=call.name,
            content="this call was interrupted (the bot restarted while it ran) and was not retried; "
            "it may or may not have taken effect",
            is_error=True,
        )
        await site.ledger.finished(site.run_id, call, result)
        await site.emit(f"⚠️ {describe_call(call)} was interrupted by a restart and was not retried.")
        return result
    if RISK_ORDER[tool.risk] > 0:  # a safe call cut off is simply run again: no write before it
        await site.ledger.started(site.run_id, call)
    started = site.clock()
    try:
        content = await tool.invoke(
            call.args,
            ToolContext(chat_key=site.chat_key, user_id=site.user_id, call_id=call.id, agent=agent, run_id=site.run_id),
        )
        result = ToolResult(call_id=call.id, name=call.name, content=_clip(content))
    except ToolError as exc:
        result = ToolResult(call_id=call.id, name=call.name, content=str(exc), is_error=True)
    except Exception as exc:  # a tool's bug must reach the model as a result, not crash the run
        log.exception("tool %s failed", call.name)
        result = ToolResult(call_id=call.id, name=call.name, content=f"{type(exc).__name__}: {exc}", is_error=True)
    await site.ledger.finished(site.run_id, call, result)
    output = str(result.content)
    site.tracer.event(
        "tool_call",
        agent=agent,
        tool=call.name,
        arguments=call.args,
        # What it gave back, bounded (the tracer redacts secrets from every field it keeps).
        result=None if result.is_error else output[:TRACE_RESULT_CHARS],
        result_size=len(output),
        duration_ms=round((site.clock() - started) * 1000, 3),
        error=str(result.content) if result.is_error else None,
    )
    return result
