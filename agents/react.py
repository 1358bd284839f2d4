"""The ReAct runner: model ⇄ tools until an answer or the iteration cap.

Every tool call of a model turn gets exactly one result before the next model
call.  Tools are called through the run's approval toolset: a call that needs
approval raises :class:`~agents.approval.ApprovalRequired` there, before it
executes, and the runner pauses the run (a ``tool_confirm`` interrupt carrying
the run's state); calls that do not are run first, through the ledger, so
resuming never runs anything twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from agents.approval import ApprovalRequired
from agents.context import RunContext
from agents.handoffs import HandoffTarget, check_handoff, handoff_tools, is_handoff_call, target_of
from agents.messages import Message, ToolCall, ToolResult
from agents.models.base import CUT_OFF, ToolDeclaration, complete
from agents.resolutions import Answer, Resolution, ToolDecision
from agents.results import Choice, FinalAnswer, HandoffRequest, InterruptRequest, Resumable, RunResult
from agents.tools.base import RISK_ORDER, Tool, ToolError
from agents.tools.calls import describe_call

__all__ = ["ASK_USER", "ASK_USER_TOOL", "CONFIRM_QUESTION", "ReactRunner", "describe_call", "tool_index"]

DEFAULT_PROMPT = (
    "You are a capable assistant that uses tools to act and to look things up. Call tools when they help; "
    "when you have what you need, answer briefly in the user's language."
)
LIMIT_NOTE = (
    "You have reached the limit of tool steps for this request. Do not call tools. Answer now with what you "
    "found so far, and say plainly what is unfinished."
)
DENIED = "denied by the user"
CONFIRM_QUESTION = "🔐 Confirm before I run:"
"""The line above the calls of a confirmation (an agent file's ``confirmation.prompt_template`` replaces it)."""
ASK_USER = "ask_user"
TOOL_NAMES = (ASK_USER,)
"""The control tools this module makes (the gateway offers them: :mod:`bot.runs.tool_names`)."""


async def _ask_user(question: str, choices: list[str] | None = None) -> str:
    """Ask the user a question and wait for the answer (optional choices become buttons)."""
    raise RuntimeError("ask_user is a control tool: the runner turns it into a question for the user")


ASK_USER_TOOL = Tool(
    name=ASK_USER,
    description=(
        "Ask the user a question and wait for the answer; use it when you need information only the user has. "
        "Optional choices are shown as buttons."
    ),
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "choices": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["question"],
    },
    func=_ask_user,
    risk="safe",
    toolset="control",
)
STATE_VERSION = 1


def _misfit(call: ToolCall, tools: dict[str, Tool]) -> str | None:
    """Why edited arguments cannot run (the tool's schema refuses them), or None."""
    tool = tools.get(call.name)
    if tool is None:
        return None  # calling it says "unknown tool"
    try:
        tool.validate(call.args)
    except ToolError as exc:
        return f"not run: the edited arguments do not fit: {exc}"
    return None


INDEXES_KEPT = 256
"""Tool sets whose index and declarations are kept (all are dropped when it is full)."""
_Index = tuple[tuple[Tool, ...], tuple[HandoffTarget, ...], dict[str, Tool], tuple[ToolDeclaration, ...]]
_indexes: dict[tuple[int, ...], _Index] = {}


def tool_index(
    tools: Sequence[Tool], handoffs: Sequence[HandoffTarget]
) -> tuple[dict[str, Tool], tuple[ToolDeclaration, ...]]:
    """The tools a run offers by name (``tools``, then the ``transfer_to_*`` tools of ``handoffs``), and their
    declarations to the model.

    Kept for a tuple of tools (immutable: the gateway gives each agent's chosen tools as one, the same on
    nearly every message) and the same handoff targets: the index and its declarations were made on every run
    (see bench/README.md).  An entry holds what its key
    names by id, so no id in it can be reused while it is kept.
    """
    key = (id(tools), *map(id, handoffs)) if type(tools) is tuple else None
    if key is not None:
        kept = _indexes.get(key)
        if kept is not None and kept[0] is tools:
            return kept[2], kept[3]
    by_name = {t.name: t for t in [*tools, *handoff_tools(handoffs)]}
    declared = tuple(t.declaration() for t in by_name.values())
    if key is not None:
        if len(_indexes) >= INDEXES_KEPT:
            _indexes.clear()
        _indexes[key] = (tuple(tools), tuple(handoffs), by_name, declared)
    return by_name, declared


class ReactRunner(Resumable):
    """Runs an agent that may call tools."""

    def __init__(
        self,
        name: str = "react",
        system_prompt: str = DEFAULT_PROMPT,
        max_iterations: int = 10,
        *,
        confirm_question: str = CONFIRM_QUESTION,
    ) -> None:
        self.name = name
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.confirm_question = confirm_question
        """Shown above the calls to confirm ({agent} and {tools} are filled in); the calls follow in full."""

    def run(self, ctx: RunContext, message: Message) -> Coroutine[Any, Any, RunResult]:
        """The loop's own coroutine (awaited as a runner's ``run``: no coroutine around it)."""
        return self._loop(ctx, [message], iteration=0)

    async def resume(self, ctx: RunContext, state: dict[str, Any], resolution: Resolution) -> RunResult:
        """Continue after a ``tool_confirm`` (run approved calls, deny the others) or an ``ask_user`` answer.

        Only a :class:`ToolDecision` approves anything: every other resolution denies the calls."""
        messages = [Message.model_validate(m) for m in state["messages"]]
        done = {r["call_id"]: ToolResult.model_validate(r) for r in state.get("results", [])}
        decision = resolution if isinstance(resolution, ToolDecision) else ToolDecision(reason=resolution.reason)
        answer = resolution.text if isinstance(resolution, Answer) else None
        approved, changed = set(decision.approved), decision.edited
        tools = self._tools(ctx)
        if changed:
            # What a person changed is what the model sees it called, and what runs (checked again first).
            turn = messages[-1]
            edited = tuple(
                c.model_copy(update={"args": changed[c.id]}) if c.id in changed else c for c in turn.tool_calls
            )
            messages[-1] = turn.model_copy(update={"tool_calls": edited})
        calls = list(messages[-1].tool_calls)
        results: list[ToolResult] = []
        for call in calls:
            if call.id in done:
                results.append(done[call.id])
            elif call.name == ASK_USER and answer is not None:
                results.append(ToolResult(call_id=call.id, name=call.name, content=answer))
            elif call.id in approved and call.id in changed and (problem := _misfit(call, tools)):
                results.append(ToolResult(call_id=call.id, name=call.name, content=problem, is_error=True))
            elif call.id in approved:  # a person's yes to this very call (as edited): what runs
                results.append(await ctx.toolset.call_tool(ctx, call, agent=self.name, approved=True))
            else:
                reason = resolution.reason or DENIED
                results.append(ToolResult(call_id=call.id, name=call.name, content=reason, is_error=True))
        messages.append(Message.results(results))
        return await self._loop(ctx, messages, iteration=int(state.get("iteration", 0)))

    def _tools(self, ctx: RunContext) -> dict[str, Tool]:
        return tool_index(ctx.tools, ctx.handoffs)[0]

    def _handoff(
        self, ctx: RunContext, new: list[Message], turn: Message, results: dict[str, ToolResult]
    ) -> HandoffRequest | None:
        """Check the turn's ``transfer_to_*`` calls: refused ones get a tool error in ``results``;
        the first allowed one ends the turn (its other calls are not run) and becomes the request."""
        chosen: tuple[ToolCall, str] | None = None
        chain = list(ctx.handoff_chain) or [self.name]
        for call in (c for c in turn.tool_calls if is_handoff_call(c)):
            target = target_of(call, ctx.handoffs)
            refusal: str | None
            if call.id in results:  # its arguments do not fit the tool (a payload against its schema)
                refusal = results[call.id].content
            elif chosen is not None:
                refusal = "refused: only one handoff per turn"
            else:
                payload = call.args.get("payload")
                refusal = check_handoff(
                    target, ctx.handoffs, chain, ctx.max_handoff_depth, state=ctx.state, payload=payload
                )
            if refusal is not None:
                results[call.id] = ToolResult(call_id=call.id, name=call.name, content=refusal, is_error=True)
                payload = call.args.get("payload")
                ctx.tracer.event(
                    "handoff", agent=self.name, target=target, status="refused", reason=refusal, payload=payload
                )
            else:
                chosen = (call, target)
        if chosen is None:
            return None
        call, target = chosen
        for other in turn.tool_calls:
            if other.id not in results:
                content = f"transferred to {target}" if other is call else f"not run: handed off to {target}"
                results[other.id] = ToolResult(
                    call_id=other.id, name=other.name, content=content, is_error=other is not call
                )
        new.append(Message.results([results[c.id] for c in turn.tool_calls]))
        return HandoffRequest(
            target=target,
            reason=str(call.args.get("reason") or "").strip() or "no reason given",
            summary=str(call.args.get("summary") or ""),
            context=str(call.args.get("context") or ""),
            payload=call.args.get("payload"),
            message=new[0],
            messages=tuple(new[1:]),
            agent=self.name,
        )

    async def _loop(self, ctx: RunContext, new: list[Message], iteration: int) -> RunResult:
        tools, declarations = tool_index(ctx.tools, ctx.handoffs)
        while iteration < self.max_iterations:
            iteration += 1
            response = await self._request(ctx, new, declarations)
            turn = response.to_message(agent=self.name)
            if response.truncated and not turn.tool_calls:
                turn = turn.model_copy(update={"text": (turn.text or "") + CUT_OFF})
            new.append(turn)
            if not turn.tool_calls:
                return FinalAnswer(text=turn.text or "", messages=tuple(new[1:]), agent=self.name)
            # Calls whose arguments are unusable go back to the model as errors, before anything else:
            # never to a person for confirmation, never to a tool.
            refused = self._invalid_calls(turn, tools)
            handoff = self._handoff(ctx, new, turn, refused)
            if handoff is not None:
                return handoff
            asks = [c for c in turn.tool_calls if c.name == ASK_USER and c.name in tools]
            ran, confirm = await self._call_tools(
                ctx, [c for c in turn.tool_calls if c not in asks and c.id not in refused], tools
            )
            results = {**refused, **ran}
            if asks and (confirm or len(asks) > 1):
                # One question at a time, and not mixed with confirmations: the model asks again later.
                for c in [*asks, *confirm]:
                    results[c.id] = ToolResult(
                        call_id=c.id,
                        name=c.name,
                        content="not run: ask_user must be the only pending call",
                        is_error=True,
                    )
            elif asks:
                return self._ask_request(new, results, asks[0], iteration)
            elif confirm:
                return self._confirm_request(new, results, confirm, tools, iteration)
            new.append(Message.results([results[c.id] for c in turn.tool_calls]))
        response = await self._request(ctx, new, [], note=LIMIT_NOTE)
        text = response.text or f"I stopped after {self.max_iterations} steps without a final answer."
        new.append(Message.assistant(text, agent=self.name))
        return FinalAnswer(text=text, messages=tuple(new[1:]), agent=self.name)

    @staticmethod
    def _invalid_calls(turn: Message, tools: dict[str, Tool]) -> dict[str, ToolResult]:
        refused: dict[str, ToolResult] = {}
        for call in turn.tool_calls:
            problem = f"invalid arguments for {call.name}: {call.invalid}" if call.invalid else None
            if problem is None and call.name in tools:
                try:
                    tools[call.name].validate(call.args)
                except ToolError as exc:
                    problem = str(exc)
            if problem is not None:
                refused[call.id] = ToolResult(call_id=call.id, name=call.name, content=problem, is_error=True)
        return refused

    async def _request(
        self, ctx: RunContext, new: list[Message], declarations: Sequence[Any], note: str | None = None
    ) -> Any:
        started = ctx.clock()
        system = ctx.system(self.system_prompt) if note is None else f"{ctx.system(self.system_prompt)}\n\n{note}"
        messages = [*ctx.history, *new]
        if ctx.stream is None:  # what complete() does then, without its coroutine
            response = await ctx.model.request(messages, tools=declarations, system=system)
        else:
            response = await complete(ctx.model, messages, tools=declarations, system=system, stream=ctx.stream)
        ctx.model_called(self.name, response, started)
        return response

    async def _call_tools(
        self, ctx: RunContext, calls: list[ToolCall], tools: dict[str, Tool]
    ) -> tuple[dict[str, ToolResult], list[ToolCall]]:
        """Call ``calls`` through the toolset, safe ones concurrently, the rest in order: their results, and the
        calls the toolset held back for a person's approval (in the turn's order; none of them ran)."""
        results: dict[str, ToolResult] = {}
        held: set[str] = set()
        safe = [c for c in calls if c.name in tools and RISK_ORDER[tools[c.name].risk] == 0]
        for call, result in zip(safe, await asyncio.gather(*(self._call(ctx, c) for c in safe)), strict=True):
            if result is None:
                held.add(call.id)
            else:
                results[call.id] = result
        for call in calls:
            if call.id not in results and call.id not in held:
                result = await self._call(ctx, call)
                if result is None:
                    held.add(call.id)
                else:
                    results[call.id] = result
        return results, [c for c in calls if c.id in held]

    async def _call(self, ctx: RunContext, call: ToolCall) -> ToolResult | None:
        """The call's result, or None when it needs a person's approval first (it did not run)."""
        try:
            return await ctx.toolset.call_tool(ctx, call, agent=self.name)
        except ApprovalRequired:
            return None

    def _state(self, new: list[Message], results: dict[str, ToolResult], iteration: int, phase: str) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "runner": "react",
            "phase": phase,
            "agent": self.name,
            "iteration": iteration,
            "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in new],
            "results": [r.model_dump(mode="json") for r in results.values()],
        }

    def _ask_request(
        self, new: list[Message], results: dict[str, ToolResult], ask: ToolCall, iteration: int
    ) -> InterruptRequest:
        question = str(ask.args.get("question") or "?")
        options = [str(c) for c in ask.args.get("choices") or []][:10]
        return InterruptRequest(
            kind="ask_user",
            prompt=f"❓ {question}",
            choices=tuple(Choice(label=o[:60], value=f"c{i}") for i, o in enumerate(options)),
            payload={"question": question, "choices": options, "call_id": ask.id},
            state=self._state(new, results, iteration, "ask_user"),
            messages=tuple(new[1:]),
            agent=self.name,
        )

    def _confirm_request(
        self,
        new: list[Message],
        results: dict[str, ToolResult],
        confirm: list[ToolCall],
        tools: dict[str, Tool],
        iteration: int,
    ) -> InterruptRequest:
        lines = [f"• {describe_call(c, None)}" for c in confirm]
        names = ", ".join(sorted({c.name for c in confirm}))
        question = self.confirm_question.replace("{agent}", self.name).replace("{tools}", names)
        prompt = question + "\n" + "\n".join(lines)
        return InterruptRequest(
            kind="tool_confirm",
            prompt=prompt,
            payload={
                "calls": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "args": c.args,
                        "risk": tools[c.name].risk,
                        "label": describe_call(c, 60),
                    }
                    for c in confirm
                ]
            },
            state=self._state(new, results, iteration, "tool_confirm"),
            messages=tuple(new[1:]),
            agent=self.name,
        )
