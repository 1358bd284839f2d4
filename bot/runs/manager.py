"""Runs: record a run's start, its pauses and its finish; the agent loop (:mod:`agents.loop`) does the rest.

Write order (the heart of the design):
- a run starts with a ``runs`` row (status ``running``);
- a pause commits the checkpoint (the :class:`~agents.state.RunState`, encoded once), the interrupt row and
  the prompt's outbox entry in one transaction, *then* sends the prompt and records its message reference
  (so the prompt can be edited after a restart);
- a finish commits the run's turns to the history, the run's status and the reply's outbox entry in one
  transaction, then sends the reply.
A crash between a commit and a send leaves an outbox entry that is sent at the next start; a crash inside
a run leaves a ``running`` row that is resumed from its checkpoint (the ledger keeps tools from running
twice) or reported.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from agents.context import RunContext
from agents.graph import GraphPosition
from agents.handoffs import HandoffContext
from agents.loop import AgentLoop, Finished, Leg, LoopAgent, LoopSettings, Paused, Stopped, pause
from agents.messages import Message
from agents.models.base import Model, ModelError
from agents.resolutions import Resolution
from agents.results import InterruptRequest, RunResult
from agents.state import RunState, RunStateError
from agents.tools.ledger import LedgerEntry
from bot.clock import SYSTEM_CLOCK, Clock, SameDelay
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.ids import new_id, new_nonce
from bot.interrupts.expiry import ExpiryTimers
from bot.interrupts.text import SHOW_ALL, buttons_for, hint, locked_prompt, prompt_choices
from bot.memory.service import MemoryService
from bot.ops.budgets import BudgetExceeded, Budgets
from bot.ops.metrics import Metrics
from bot.runs.catalog import AgentCatalog, AgentDef
from bot.runs.context import ModelSource, RunConfig, RunContexts, ToolPool, ToolSource
from bot.runs.streaming import ReplyStream
from bot.store.ports import ChatReads, Runs
from bot.store.retry import DELAYED, until_stored
from bot.store.rows import InterruptRow, RunRow
from bot.tracing.context import correlated
from bot.tracing.recorder import Tracing

log = logging.getLogger(__name__)

__all__ = ["TYPING_AFTER_S", "RunConfig", "RunManager", "ToolPool"]

TYPING_AFTER_S = 1.0  # a run still working after this long shows the typing indicator (a quick answer needs none)


@dataclass
class RunManager:
    config: RunConfig
    """The sections of the settings runs read."""
    store: ChatReads
    runs: Runs
    catalog: AgentCatalog
    model: Model
    delivery: Delivery
    timers: ExpiryTimers
    tools: ToolSource
    """The tool pool offered to an agent (built-in, gateway and its MCP servers' tools), before allow/deny."""
    tracing: Tracing | None = None
    models: ModelSource | None = None
    """Agents' own models (``model:`` in their files) and the repairer's; None: ``model`` for everything."""
    memory: MemoryService | None = None
    """Recall before a turn, memory tools, session keys and summaries (None: none of it)."""
    budgets: Budgets | None = None
    """Token and cost budgets: every model call of a run is checked and counted (None: unlimited, uncounted)."""
    metrics: Metrics | None = None
    text_limits: dict[str, int | None] = field(default_factory=dict)
    """The longest text one message holds, per channel (None: no limit): longer confirmations are locked."""
    prints_as_written: frozenset[str] = frozenset()
    """Channels that show an answer's text as it comes (a terminal)."""
    clock: Clock = SYSTEM_CLOCK
    """Deadlines of pauses, streaming intervals and the run context's clock."""
    contexts: RunContexts = field(init=False, repr=False)
    loop_settings: LoopSettings = field(init=False, repr=False)
    typing_timers: SameDelay = field(init=False, repr=False)
    """Each run's typing indicator, due ``TYPING_AFTER_S`` after it starts (one clock timer for all)."""

    def __post_init__(self) -> None:
        self.contexts = RunContexts(
            config=self.config,
            store=self.store,
            runs=self.runs,
            model=self.model,
            tools=self.tools,
            emit=self._emit,
            models=self.models,
            memory=self.memory,
            budgets=self.budgets,
            tracing=self.tracing,
        )
        handoffs = self.config.handoffs
        self.loop_settings = LoopSettings(notify=handoffs.notify or "", context_messages=handoffs.context_messages)
        self.typing_timers = SameDelay(self.clock, TYPING_AFTER_S)

    async def _emit(self, chat: ChatKey, text: str) -> None:
        await self.delivery.send(_notice(chat, text))

    def trace(self, type: str, run: RunRow, agent: str = "", **fields: Any) -> None:
        if self.tracing is not None:
            self.tracing.record(
                type, run.chat_key, run.correlation_id, run_id=run.id, agent=agent or run.agent, **fields
            )

    # -- start / resume ------------------------------------------------------------------

    async def start(
        self,
        run: RunRow,
        agent: AgentDef,
        message: Message,
        *,
        recorded: bool = False,
        rerun: list[LedgerEntry] | None = None,
    ) -> None:
        """Record the run (unless ``recorded``: its row committed with its message), then drive it from ``message``.
        ``rerun``: the ledger of an attempt at it cut off by a crash (what it finished is not done again)."""
        if not recorded:
            # Not awaited: the run's later writes commit after this one, in order.
            self.runs.start_run_later(run)
        ports = _RunPorts(self, run, rerun or None)
        loop = AgentLoop(self.catalog, ports, self.loop_settings)
        first = await loop.first_leg(agent, message)
        if isinstance(first, Stopped):
            await self.finish(run, "failed", first.messages, _notice(run.chat, first.text))
            return
        leg = first
        await self._drive(run, loop, ports, leg, lambda: leg.agent.runner.run(leg.ctx, message))

    async def resume(self, run: RunRow, resolution: Resolution, *, running: bool = False) -> None:
        """Continue a paused run from its checkpoint with the human's ``resolution``.

        ``running``: the run's row already says so (the resolution's write changed it).
        """
        chat = run.chat
        try:
            state = RunState.load(run.checkpoint)
        except RunStateError as exc:
            log.error("run %s: %s", run.id, exc)
            await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {exc}."))
            return
        ports = _RunPorts(self, run)
        loop = AgentLoop(self.catalog, ports, self.loop_settings)
        resumed = await loop.resume(state, resolution)
        if isinstance(resumed, Stopped):
            await self.finish(run, "failed", resumed.messages, _notice(chat, resumed.text))
            return
        if not running:
            self.runs.set_run_later(run.id, status="running")
        await self._drive(run, loop, ports, resumed.leg, resumed.step)

    def _stream(self, run: RunRow) -> ReplyStream | None:
        """The answer shown as it is written, where the channel streams (``channels.<name>.streaming``)."""
        section = getattr(self.config.channels, run.chat.channel, None)
        if section is None or not section.streaming:
            return None
        limit, terminal = self.text_limits.get(run.chat.channel), run.chat.channel in self.prints_as_written
        return ReplyStream(
            self.delivery, run.chat, reply_to=run.reply_to, limit=limit, terminal=terminal, clock=self.clock
        )

    def _typing(self, chat: ChatKey, notice: str | None = None) -> None:
        message = OutboundMessage(chat=chat, kind="typing") if notice is None else _notice(chat, notice)
        task = asyncio.ensure_future(self.delivery.send(message))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # it may fail quietly

    async def _drive(
        self, run: RunRow, loop: AgentLoop, ports: _RunPorts, leg: Leg, step: Callable[[], Awaitable[RunResult]]
    ) -> None:
        """Drive the run through the agent loop; then record its answer, its pause or its failure."""
        with correlated(run.correlation_id):
            chat = run.chat
            typing = self.typing_timers.call_later(lambda: self._typing(chat))
            started, worked = time.perf_counter(), "failed"
            # A graph's nodes answer one after another: only the last answer is the reply, so none is shown growing.
            # A model that cannot stream gives its answer whole, so there is nothing to preview (unless a handoff
            # may bring in one that can).
            shows = leg.graph is None and (leg.ctx.model.streams or bool(leg.ctx.handoffs))
            stream = self._stream(run) if shows else None
            try:
                try:
                    outcome = await loop.drive(leg, step, stream)
                    if not isinstance(outcome, Stopped):
                        worked = "answered" if isinstance(outcome, Finished) else "paused"
                except BaseException:
                    if stream is not None:
                        await stream.close()
                    raise
            except BudgetExceeded as exc:
                self.trace("error", run, loop.leg.agent.name, message=f"budget: {exc.scope}")
                await self.finish(run, "stopped", loop.leg.prefix, _notice(chat, str(exc)))
                return
            except ModelError as exc:
                log.warning("chat %s: model error in %s: %s", chat, loop.leg.agent.name, exc)
                self.trace("error", run, loop.leg.agent.name, message=f"model error: {exc}")
                text = f"⚠️ The model failed: {exc}. Your message is saved; try again."
                await self.finish(run, "failed", loop.leg.prefix, _notice(chat, text))
                return
            except RunStateError as exc:
                self.trace("error", run, loop.leg.agent.name, message=f"checkpoint: {exc}")
                await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {exc}."))
                return
            finally:
                typing.cancel()
                if self.metrics is not None:
                    self.metrics.run_worked(loop.leg.agent.name, worked, time.perf_counter() - started)
            if isinstance(outcome, Finished):
                reply = OutboundMessage(
                    chat=chat, text=outcome.answer.text or "(no answer)", reply_to=run.reply_to, key=f"reply:{run.id}"
                )
                if stream is not None:
                    reply = await stream.final(reply)
                await self.finish(run, "done", outcome.messages, reply)
            elif isinstance(outcome, Paused):
                if stream is not None:
                    await stream.interrupt()
                await pause(outcome.leg, outcome.request, ports, ports)
            else:
                await self.finish(run, "failed", outcome.messages, _notice(chat, outcome.text))

    # -- pause / finish --------------------------------------------------------------------

    async def persist_pause(
        self, run: RunRow, state: RunState, request: InterruptRequest, agent: LoopAgent
    ) -> _Pending:
        """Commit the run's state, the interrupt row and the prompt's outbox entry together (not sent yet)."""
        chat = run.chat
        interrupt_id, nonce = new_id(), new_nonce()
        choices = prompt_choices(request, group=not run.direct)
        own = agent.confirm_timeout_s if request.kind == "tool_confirm" and isinstance(agent, AgentDef) else None
        timeout = own or self.config.interrupts.timeout_for(request.kind)
        shown, payload = request.prompt, request.payload
        if not run.direct and request.kind == "tool_confirm":
            payload = {**payload, "group": True}  # "always allow" is then an admin's (InterruptService._check)
        limit = self.text_limits.get(chat.channel)
        if request.kind == "tool_confirm" and limit is not None and len(shown) + 60 > limit:
            # Too long to see at once: a preview, "Show all" and Deny; Approve only once all of it was shown.
            shown, payload, choices = locked_prompt(request.prompt, request.payload, choices, limit)
        interrupt = InterruptRow(
            id=interrupt_id,
            chat_key=run.chat_key,
            run_id=run.id,
            kind=request.kind,
            prompt=shown,
            payload=payload,
            choices=[list(c) for c in choices],
            nonce=nonce,
            requester=run.user_id,
            expires_at=self.clock.utcnow() + timedelta(seconds=timeout),
        )
        text = shown + hint(request.kind, bool(choices), locked=SHOW_ALL in (v for _l, v in choices))
        prompt = OutboundMessage(
            chat=chat, text=text, buttons=buttons_for(interrupt_id, nonce, choices), key=f"prompt:{interrupt_id}"
        )
        outbox_id = await self.runs.pause(run, state.encode(), interrupt, prompt.model_dump_json())
        self.trace("interrupt", run, agent.name, kind=request.kind, status="raised", interrupt_id=interrupt_id)
        self.timers.schedule(interrupt.id, interrupt.expires_at)
        return _Pending(outbox_id, prompt, interrupt)

    async def finish(
        self, run: RunRow, status: str, messages: tuple[Message, ...] | list[Message], reply: OutboundMessage | None
    ) -> None:
        self.trace("run", run, status=status)
        if reply is not None and reply.key is None:
            reply = reply.model_copy(update={"key": f"reply:{run.id}"})
        try:
            outbox_id = await until_stored(
                lambda: self.runs.finish_run(run, status, messages, reply.model_dump_json() if reply else None),
                self.clock,
                waiting=lambda exc: self._typing(run.chat, DELAYED),
            )
        except Exception:
            log.exception("chat %s: could not store the end of run %s", run.chat_key, run.id)
            chat = run.chat
            await self.delivery.send(
                _notice(chat, "⚠️ I could not save my answer, so I did not send it. Please try again.")
            )
            return
        if reply is not None and outbox_id is not None:
            await self.delivery.deliver(outbox_id, reply)
        if status == "done" and self.memory is not None:
            # The reply is out; the chat's next message waits for this (at most one summary call).
            try:
                folded = await self.memory.after_run(run.chat_key)
            except Exception:
                log.exception("chat %s: could not update the conversation summary", run.chat_key)
            else:
                if folded is not None:
                    self.trace(
                        "summary",
                        run,
                        messages=folded.messages,
                        by=folded.by,
                        summary_chars=folded.summary_chars,
                        duration_ms=round(folded.duration_ms, 3),
                    )


@dataclass(frozen=True)
class _Pending:
    """A pause committed, its prompt not sent yet."""

    outbox_id: int
    prompt: OutboundMessage
    interrupt: InterruptRow


@dataclass
class _RunPorts:
    """The gateway's side of one run, for the agent loop: contexts, notices, traces, pauses, prompts."""

    manager: RunManager
    run: RunRow
    rerun: list[LedgerEntry] | None = None
    """What a first attempt cut off by a crash finished: every leg's ledger gives those results back."""

    async def context(
        self,
        agent: LoopAgent,
        *,
        chain: list[str],
        handoff: HandoffContext | None,
        query: str,
        graph: GraphPosition | None,
        resumed: bool = False,
    ) -> RunContext:
        if not isinstance(agent, AgentDef):
            raise TypeError(f"not an agent of the catalog: {agent!r}")
        return await self.manager.contexts.build(
            self.run, agent, resumed=resumed, chain=chain, handoff=handoff, query=query, graph=graph, rerun=self.rerun
        )

    async def notify(self, text: str) -> None:
        await self.manager.delivery.send(_notice(self.run.chat, text))

    def trace(self, type: str, agent: str, **fields: Any) -> None:
        self.manager.trace(type, self.run, agent, **fields)

    def handed_off(self, agent: str) -> None:
        self.manager.runs.set_run_later(self.run.id, agent=agent)

    async def persist_pause(self, state: RunState, request: InterruptRequest, agent: LoopAgent) -> _Pending:
        return await self.manager.persist_pause(self.run, state, request, agent)

    async def ask(self, pending: _Pending) -> None:
        await self.manager.delivery.deliver(pending.outbox_id, pending.prompt, pending.interrupt)


def _notice(chat: ChatKey, text: str) -> OutboundMessage:
    return OutboundMessage(chat=chat, text=text, kind="notice")
