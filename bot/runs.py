"""Runs: start an agent, pause it for a human, resume it, finish it.

Write order (the heart of the design):
- a run starts with a ``runs`` row (status ``running``);
- a pause commits the checkpoint, the interrupt row and the prompt's outbox
  entry in one transaction, *then* sends the prompt and records its message
  reference (so the prompt can be edited after a restart);
- a finish commits the run's turns to the history, the run's status and the
  reply's outbox entry in one transaction, then sends the reply.
A crash between a commit and a send leaves an outbox entry that is sent at the
next start; a crash inside a run leaves a ``running`` row that is resumed from
its checkpoint (the ledger keeps tools from running twice) or reported.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agents.context import RunContext
from agents.messages import Message, ToolCall, fit_context
from agents.models.base import Model, ModelError
from agents.results import FinalAnswer, InterruptRequest, RunResult
from agents.tools.base import RISK_ORDER, Tool
from agents.tools.ledger import LedgerEntry
from bot.catalog import AgentCatalog, AgentDef
from bot.checkpoints import CheckpointError, load_checkpoint, make_checkpoint
from bot.events import ChatKey, OutboundMessage
from bot.interrupt_text import buttons_for, new_id, new_nonce, tool_confirm_choices
from bot.settings import Settings
from bot.store.ops import utcnow
from bot.store.runs import InterruptRow, RunRow, RunStore
from bot.store.sql import SqlStore

log = logging.getLogger(__name__)

NEVER_GRANTED = frozenset({"run_command"})
"""Tools that are confirmed every time, whatever the chat's grants say."""


class RunLedger:
    """The tool ledger of one run, in the store; fresh runs skip the database read."""

    def __init__(self, runs: RunStore, resumed: bool) -> None:
        self.runs = runs
        self.resumed = resumed
        self._local: dict[tuple[str, str], LedgerEntry] = {}

    async def get(self, run_id: str, call_id: str) -> LedgerEntry | None:
        entry = self._local.get((run_id, call_id))
        if entry is None and self.resumed:
            entry = await self.runs.ledger_get(run_id, call_id)
        return entry

    async def started(self, run_id: str, call: ToolCall) -> None:
        await self.runs.ledger_started(run_id, call)
        self._local[(run_id, call.id)] = LedgerEntry(run_id=run_id, call_id=call.id, name=call.name, status="started")

    async def finished(self, run_id: str, result: Any) -> None:
        await self.runs.ledger_finished(run_id, result)
        status = "failed" if result.is_error else "succeeded"
        self._local[(run_id, result.call_id)] = LedgerEntry(
            run_id=run_id, call_id=result.call_id, name=result.name, status=status, result=result
        )


Send = Callable[[OutboundMessage], Awaitable[str | None]]


@dataclass
class RunManager:
    settings: Settings
    store: SqlStore
    runs: RunStore
    catalog: AgentCatalog
    model: Model
    send: Send
    tools: Callable[[AgentDef], Awaitable[Sequence[Tool]]]
    """The tool pool offered to an agent (built-in, gateway and its MCP servers' tools), before allow/deny."""
    on_pause: Callable[[InterruptRow], None] | None = None
    models: dict[str, Model] | None = None

    # -- context -------------------------------------------------------------------------

    async def grants(self, chat: ChatKey) -> list[str]:
        return list((await self.store.chat_settings(chat.settings_key)).get("grants", []))

    async def context(self, run: RunRow, agent: AgentDef, *, resumed: bool) -> RunContext:
        chat = ChatKey.parse(run.chat_key)
        state = await self.store.chat_state(run.chat_key)
        before = [m for i, m in zip(state.ids, state.messages, strict=True) if i < run.history_cutoff]
        if agent.context_mode == "isolated":
            before = own_turns(before, agent.name)
        history = fit_context(before, self.settings.store.context_chars)
        grants = set(await self.grants(chat))

        def needs_confirmation(tool: Tool, call: ToolCall) -> bool:
            if tool.name in NEVER_GRANTED:
                return True
            if tool.name in grants:
                return False
            return tool.confirm or RISK_ORDER[tool.risk] >= RISK_ORDER["high"] or agent.confirms(tool.name)

        async def emit(text: str) -> None:
            await self.send(OutboundMessage(chat=chat, text=text, kind="notice"))

        return RunContext(
            chat_key=run.chat_key,
            model=self.model_for(agent),
            history=history,
            emit=emit,
            correlation_id=run.correlation_id,
            user_id=run.user_id,
            run_id=run.id,
            tools=agent.tools(await self.tools(agent)),
            ledger=RunLedger(self.runs, resumed),
            needs_confirmation=needs_confirmation,
        )

    def model_for(self, agent: AgentDef) -> Model:
        if agent.model and self.models is not None and agent.model in self.models:
            return self.models[agent.model]
        return self.model

    # -- start / resume ------------------------------------------------------------------

    async def start(self, run: RunRow, agent: AgentDef, message: Message) -> None:
        """Record the run, then drive it from ``message``."""
        await self.store.write([self.runs.start_run_step(run)])
        ctx = await self.context(run, agent, resumed=False)
        await self._drive(run, agent, ctx, lambda: agent.runner.run(ctx, message), chain=[agent.name])

    async def resume(self, run: RunRow, resolution: dict[str, Any]) -> None:
        """Continue a paused run from its checkpoint with the human's ``resolution``."""
        chat = ChatKey.parse(run.chat_key)
        try:
            checkpoint = load_checkpoint(run.checkpoint)
        except CheckpointError as exc:
            log.error("run %s: %s", run.id, exc)
            await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {exc}."))
            return
        agent = self.catalog.get(checkpoint["agent"])
        resume = getattr(agent.runner, "resume", None) if agent is not None else None
        if agent is None or resume is None:
            reason = f"the agent {checkpoint['agent']!r} is no longer available"
            await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {reason}."))
            return
        await self.runs.set_run(run.id, status="running")
        ctx = await self.context(run, agent, resumed=True)
        chain = list(checkpoint.get("handoff_chain") or [agent.name])
        await self._drive(run, agent, ctx, lambda: resume(ctx, checkpoint["state"], resolution), chain=chain)

    async def _drive(
        self,
        run: RunRow,
        agent: AgentDef,
        ctx: RunContext,
        step: Callable[[], Awaitable[RunResult]],
        chain: list[str],
    ) -> None:
        chat = ChatKey.parse(run.chat_key)
        await self.send(OutboundMessage(chat=chat, kind="typing"))
        try:
            result = await step()
        except ModelError as exc:
            log.warning("chat %s: model error in %s: %s", chat, agent.name, exc)
            text = f"⚠️ The model failed: {exc}. Your message is saved; try again."
            await self.finish(run, "failed", [], _notice(chat, text))
            return
        except CheckpointError as exc:
            await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {exc}."))
            return
        if isinstance(result, FinalAnswer):
            reply = OutboundMessage(chat=chat, text=result.text or "(no answer)", reply_to=run.reply_to)
            await self.finish(run, "done", result.messages, reply)
        else:
            await self.pause(run, agent, result, chain)

    # -- pause / finish --------------------------------------------------------------------

    async def pause(self, run: RunRow, agent: AgentDef, request: InterruptRequest, chain: list[str]) -> None:
        chat = ChatKey.parse(run.chat_key)
        interrupt_id, nonce = new_id(), new_nonce()
        choices = await self._choices(chat, request)
        own = agent.confirm_timeout_s if request.kind == "tool_confirm" else None
        timeout = own or self.settings.interrupts.timeout_for(request.kind)
        interrupt = InterruptRow(
            id=interrupt_id,
            chat_key=run.chat_key,
            run_id=run.id,
            kind=request.kind,
            prompt=request.prompt,
            payload=request.payload,
            choices=[list(c) for c in choices],
            nonce=nonce,
            requester=run.user_id,
            expires_at=utcnow() + timedelta(seconds=timeout),
        )
        text = request.prompt + _hint(request.kind, bool(choices))
        prompt = OutboundMessage(chat=chat, text=text, buttons=buttons_for(interrupt_id, nonce, choices))
        phase = str(request.state.get("phase", request.kind))
        checkpoint = make_checkpoint(agent.name, agent.kind, phase, request.state, chain)
        outbox_id = await self.runs.pause(run, checkpoint, interrupt, prompt.model_dump_json())
        if self.on_pause is not None:
            self.on_pause(interrupt)
        ref = await self.send(prompt)
        await self.runs.sent(outbox_id, ref, interrupt.id)

    async def _choices(self, chat: ChatKey, request: InterruptRequest) -> list[tuple[str, str]]:
        if request.kind == "tool_confirm":
            calls = list(request.payload.get("calls", []))
            names = sorted({c["name"] for c in calls} - NEVER_GRANTED)
            grantable = names if len(names) == len({c["name"] for c in calls}) else []
            return tool_confirm_choices(calls, grantable)
        return [(c.label, c.value) for c in request.choices]

    async def finish(
        self, run: RunRow, status: str, messages: tuple[Message, ...] | list[Message], reply: OutboundMessage | None
    ) -> None:
        try:
            outbox_id = await self.runs.finish_run(run, status, messages, reply.model_dump_json() if reply else None)
        except Exception:
            log.exception("chat %s: could not store the end of run %s", run.chat_key, run.id)
            chat = ChatKey.parse(run.chat_key)
            await self.send(_notice(chat, "⚠️ I could not save my answer, so I did not send it. Please try again."))
            return
        if reply is not None and outbox_id is not None:
            ref = await self.send(reply)
            await self.runs.sent(outbox_id, ref)


def _notice(chat: ChatKey, text: str) -> OutboundMessage:
    return OutboundMessage(chat=chat, text=text, kind="notice")


def _hint(kind: str, has_buttons: bool) -> str:
    if kind == "ask_user":
        return "\n(Reply with your answer.)" if not has_buttons else "\n(Pick one, or reply with your answer.)"
    return "\n(Press a button, or reply yes / no.)"


def own_turns(messages: list[Message], agent: str) -> list[Message]:
    """The turns of ``messages`` an agent answered: each user message with the replies that followed it."""
    out: list[Message] = []
    turn: list[Message] = []
    for message in [*messages, Message.user("")]:
        if message.role == "user" and turn and turn[-1].role != "user":
            if any(m.agent == agent for m in turn if m.role != "user"):
                out.extend(turn)
            turn = []
        turn.append(message)
    return out
