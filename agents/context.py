"""The run context: what a runner gets from the gateway.

Defined here, implemented by ``bot``: ``agents`` never imports the gateway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.approval import NO_TOOLS, ApprovalRequiredToolset
from agents.clock import SYSTEM_CLOCK
from agents.handoffs import DEFAULT_MAX_DEPTH, HandoffTarget
from agents.messages import Message
from agents.models.base import AnswerStream, Model, ModelResponse
from agents.tools.base import Tool
from agents.tools.ledger import MemoryLedger, ToolLedger


class Tracer(Protocol):
    """Receives the decisions of a run (model calls, tools, handoffs...)."""

    def event(self, type: str, **fields: Any) -> None: ...


class NullTracer:
    def event(self, type: str, **fields: Any) -> None:
        return None


async def _no_emit(text: str) -> None:
    return None


@dataclass
class RunContext:
    """Everything a runner may use; built per run by the gateway."""

    chat_key: str
    model: Model
    history: Sequence[Message] = ()
    """Earlier turns the agent may see (chosen by the gateway per context mode)."""
    emit: Callable[[str], Awaitable[None]] = _no_emit
    """Send a progress line or notice to the chat."""
    tracer: Tracer = field(default_factory=NullTracer)
    clock: Callable[[], float] = SYSTEM_CLOCK.time
    correlation_id: str = ""
    user_id: str = ""
    run_id: str = ""
    toolset: ApprovalRequiredToolset = NO_TOOLS
    """The tools this agent may use (already filtered by its allow/deny lists), behind the rule of which calls
    wait for a person's yes: runners call tools through it (:meth:`ApprovalRequiredToolset.call_tool`)."""
    ledger: ToolLedger = field(default_factory=MemoryLedger)
    system_extra: str = ""
    """Appended to the runner's system prompt (the handoff context of a handed-off run)."""
    handoffs: Sequence[HandoffTarget] = ()
    """The agents this one may hand off to (``transfer_to_<name>`` tools)."""
    handoff_chain: Sequence[str] = ()
    """The agents of this run so far, this one last (cycles and depth are checked against it)."""
    max_handoff_depth: int = DEFAULT_MAX_DEPTH
    extra: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """The run's state (a graph's node outputs by node name): what handoff conditions are checked against."""
    stream: AnswerStream | None = None
    """Where the answer goes as the model writes it (None: only the final answer is sent)."""
    repair_model: Model | None = None
    """Asked to repair an answer a guardrail refused (None: ``model``); a cheaper one will often do."""

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The toolset's tools (what the model is offered)."""
        return self.toolset.tools

    def model_called(self, agent: str, response: ModelResponse, started: float, purpose: str | None = None) -> None:
        """Trace one model call: the model that answered, tokens, time, and whatever went wrong on the way
        (fallback attempts, an answer cut at the output limit)."""
        usage, attempts = response.usage, response.attempts
        self.tracer.event(
            "llm_call",
            agent=agent,
            model=response.model or self.model.name,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens or None,
            thinking_tokens=usage.thinking_tokens or None,
            duration_ms=round((self.clock() - started) * 1000, 3),
            truncated=response.truncated or None,
            failed_attempts=list(attempts) if attempts else None,
            purpose=purpose,
            from_cache=response.from_cache or None,
            answer=response.as_step(),  # what the model answered, so a replay from traces gives the same
        )

    def system(self, prompt: str) -> str:
        """``prompt`` with the run's extra system text."""
        return f"{prompt}\n\n{self.system_extra}" if self.system_extra else prompt
