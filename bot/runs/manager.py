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

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from agents.context import NullTracer, RunContext
from agents.graph import END, GraphPosition, GraphRunner
from agents.handoffs import HandoffContext, recent_lines
from agents.messages import Message, fit_context, recent_media
from agents.models.base import Generation, Model, ModelError
from agents.results import FinalAnswer, HandoffRequest, InterruptRequest, Resolution, RunResult
from agents.tools.base import Tool
from agents.tools.ledger import LedgerEntry
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.ids import new_id, new_nonce
from bot.interrupts.expiry import ExpiryTimers
from bot.interrupts.text import SHOW_ALL, buttons_for, hint, locked_prompt
from bot.memory.service import Briefing, MemoryService
from bot.ops.budgets import BudgetExceeded, Budgets
from bot.ops.metered import BudgetedModel
from bot.ops.metrics import Metrics
from bot.runs.catalog import AgentCatalog, AgentDef
from bot.runs.checkpoints import CheckpointError, load_checkpoint, make_checkpoint
from bot.runs.ledger import RunLedger
from bot.runs.legs import Leg, confirmation_rule, guard, own_turns, prompt_choices
from bot.runs.streaming import ReplyStream
from bot.store.retry import DELAYED, until_stored
from bot.store.runs import InterruptRow, RunRow, RunStore
from bot.store.sql import SqlStore
from bot.tracing.context import correlated
from bot.tracing.recorder import Tracing

log = logging.getLogger(__name__)

TYPING_AFTER_S = 1.0  # a run still working after this long shows the typing indicator (a quick answer needs none)


class ModelSource(Protocol):
    def get(self, spec: str | None, generation: Generation | None = None) -> Model: ...


@dataclass
class RunManager:
    settings: Settings
    store: SqlStore
    runs: RunStore
    catalog: AgentCatalog
    model: Model
    delivery: Delivery
    timers: ExpiryTimers
    tools: Callable[[AgentDef, ChatKey], Awaitable[Sequence[Tool]]]
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
    _reruns: dict[str, list[LedgerEntry]] = field(default_factory=dict, init=False, repr=False)
    """Runs re-run after a crash: what their first attempt's tools finished (shared by the run's legs)."""

    # -- context -------------------------------------------------------------------------

    async def context(
        self,
        run: RunRow,
        agent: AgentDef,
        *,
        resumed: bool,
        chain: list[str] | None = None,
        handoff: HandoffContext | None = None,
        query: str = "",
        graph: GraphPosition | None = None,
    ) -> RunContext:
        """``query``: the text the run answers (memories matching it are recalled); ``graph``: the position of
        the graph whose node this agent runs (its state goes to the handoff checks and the system prompt)."""
        chat = run.chat
        state = await self.store.chat_state(run.chat_key)
        chat_settings = await self.store.chat_settings(chat.settings_key)
        brief = await self._brief(run, agent, query, chat_settings.get("memory"))
        budget = self.settings.store.context_chars - len(brief.summary)
        if agent.context_mode == "isolated":
            before = [m for i, m in zip(state.ids, state.messages, strict=True) if i < run.history_cutoff]
            history = fit_context(own_turns(before, agent.name), budget)
        else:
            history = state.window(run.history_cutoff, budget, brief.upto_id)
        if state.media > self.settings.media.history_items:
            history = recent_media(history, self.settings.media.history_items)
        grants = set(chat_settings.get("grants", []))

        async def emit(text: str) -> None:
            await self.delivery.send(_notice(chat, text))

        pool = list(await self.tools(agent, chat)) if agent.runs_as.uses_tools else []
        if self.memory is not None:
            if brief.memory_on:
                pool += self.memory.tools()
            if agent.session_keys:
                pool.append(self.memory.session_tool(agent.session_keys))
        tools = agent.tools(pool)
        told = brief.text(tools=any(t.name == "recall" for t in tools))
        parts = (told, handoff.render() if handoff is not None else "", graph.brief() if graph is not None else "")
        extra = [part for part in parts if part]
        repair = self.settings.model.repair
        ctx = RunContext(
            chat_key=run.chat_key,
            model=self._budgeted(run, self.model_for(agent, chat_settings.get("model"))),
            repair_model=self._budgeted(run, self.models.get(repair)) if repair and self.models is not None else None,
            history=history,
            emit=emit,
            correlation_id=run.correlation_id,
            user_id=run.user_id,
            run_id=run.id,
            # A chat agent gets only its memory tools: no MCP server is woken for it.
            tools=tools,
            ledger=RunLedger(self.runs, resumed, self._reruns.get(run.id)),
            needs_confirmation=confirmation_rule(agent, grants),
            system_extra="\n\n".join(extra),
            # Handoffs are tools of ReAct agents; chat agents have no tools and plans run their own steps.
            handoffs=tuple(agent.handoffs) if agent.runs_as.hands_off else (),
            handoff_chain=tuple(chain or [agent.name]),
            max_handoff_depth=self.settings.handoffs.max_depth,
            tracer=(
                self.tracing.tracer(
                    run.chat_key, run.correlation_id, run.id, agent.name, agent.spec.tracing if agent.spec else None
                )
                if self.tracing is not None
                else NullTracer()
            ),
            state=graph.state if graph is not None else {},
        )
        if brief.memories or brief.summary or brief.session_keys:
            ctx.tracer.event("memory", agent=agent.name, **brief.trace_fields(self.settings.memory.budget_tokens))
        return ctx

    async def _brief(self, run: RunRow, agent: AgentDef, query: str, override: bool | None) -> Briefing:
        """``override``: the chat's ``/memory on|off``."""
        if self.memory is None:
            return Briefing()
        memory_on = agent.long_term_memory and self.memory.applies(override, run.direct)
        return await self.memory.brief(
            run.chat,
            run.user_id,
            agent.name,
            query,
            memory_on=memory_on,
            shared=agent.context_mode != "isolated",
            session_keys=agent.session_keys,
        )

    def trace(self, type: str, run: RunRow, agent: str = "", **fields: Any) -> None:
        if self.tracing is not None:
            self.tracing.record(
                type, run.chat_key, run.correlation_id, run_id=run.id, agent=agent or run.agent, **fields
            )

    def _budgeted(self, run: RunRow, model: Model) -> Model:
        """``model`` spending the budgets of the run's requester and chat."""
        if self.budgets is None:
            return model
        section = getattr(self.settings.channels, run.chat.channel, None)
        admin = section is not None and section.is_admin(run.user_id)
        return BudgetedModel(model, self.budgets, self.budgets.payer(run.chat, run.user_id, admin))

    def model_for(self, agent: AgentDef, chat_model: str | None = None) -> Model:
        if self.models is None:
            return self.model
        return self.models.get(agent.model or chat_model, agent.generation)  # its file's model:, else /model's

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
            self.store.write_later([self.runs.start_run_step(run)], what=f"starting run {run.id}")
        if rerun:
            self._reruns[run.id] = rerun
        try:
            if isinstance(agent.runner, GraphRunner):
                leg = await self._graph_leg(run, agent.runner, agent.runner.start(), message, [])
                if leg is not None:
                    await self._drive(run, leg, lambda: leg.agent.runner.run(leg.ctx, message))
                return
            ctx = await self.context(run, agent, resumed=False, query=message.text or "")
            await self._drive(run, Leg(agent, ctx, [agent.name], message), lambda: agent.runner.run(ctx, message))
        finally:
            self._reruns.pop(run.id, None)

    async def _graph_leg(
        self, run: RunRow, graph: GraphRunner, position: GraphPosition, message: Message, prefix: list[Message]
    ) -> Leg | None:
        """The leg that runs ``position``'s node (None, with the run failed and said so, when its agent is gone)."""
        agent = self.catalog.get(graph.agent_of(position.node))
        if agent is None:
            reason = f"the graph {graph.name}'s node {position.node!r} runs {graph.agent_of(position.node)!r}"
            await self.finish(run, "failed", prefix, _notice(run.chat, f"⚠️ {reason}, which is not available."))
            return None
        ctx = await self.context(run, agent, resumed=False, query=message.text or "", graph=position)
        return Leg(agent, ctx, [agent.name], message, prefix, graph=position)

    async def _graph_next(self, run: RunRow, leg: Leg, answer: FinalAnswer) -> Leg | None:
        """After a node answered: the leg of the next node, or None when the graph ends with this answer."""
        position = leg.graph
        assert position is not None and leg.message is not None
        graph = self.catalog.get(position.graph)
        if graph is None or not isinstance(graph.runner, GraphRunner):
            return None
        following, when = graph.runner.after(position, answer.text)
        self.trace("graph", run, leg.agent.name, graph=position.graph, node=position.node, to=following, when=when)
        if following == END:
            return None
        if graph.runner.capped(position):
            text = f"⚠️ {position.graph} stopped after {position.steps} steps (its max_steps); this is the last answer."
            await self.delivery.send(_notice(run.chat, text))
            return None
        if self.settings.handoffs.notify:
            await self.delivery.send(_notice(run.chat, f"🧭 {position.graph}: {position.node} → {following}"))
        # The run's row keeps the graph's name: a crash inside a node is reported, not re-run (nodes may have acted).
        step = GraphPosition(position.graph, following, position.state, position.steps + 1)
        return await self._graph_leg(run, graph.runner, step, leg.message, [*leg.prefix, *answer.messages])

    async def resume(self, run: RunRow, resolution: Resolution, *, running: bool = False) -> None:
        """Continue a paused run from its checkpoint with the human's ``resolution``.

        ``running``: the run's row already says so (the resolution's write changed it).
        """
        chat = run.chat
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
        if not running:
            self.runs.set_run_later(run.id, status="running")
        chain = list(checkpoint.get("handoff_chain") or [agent.name])
        handed = checkpoint.get("handoff") or {}
        handoff = HandoffContext.from_json(handed["context"]) if handed.get("context") else None
        state = checkpoint["state"]
        first = (state.get("messages") or [None])[0]
        query = str(first.get("text") or "") if isinstance(first, dict) else ""
        position = GraphPosition.from_json(checkpoint["graph"]) if checkpoint.get("graph") else None
        ctx = await self.context(run, agent, resumed=True, chain=chain, handoff=handoff, query=query, graph=position)
        prefix = [Message.model_validate(m) for m in handed.get("messages", [])]
        leg = Leg(agent, ctx, chain, Message.model_validate(first) if first else None, prefix, handoff, position)
        await self._drive(run, leg, lambda: resume(ctx, state, resolution))

    def _stream(self, run: RunRow) -> ReplyStream | None:
        """The answer shown as it is written, where the channel streams (``channels.<name>.streaming``)."""
        section = getattr(self.settings.channels, run.chat.channel, None)
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

    async def _drive(self, run: RunRow, leg: Leg, step: Callable[[], Awaitable[RunResult]]) -> None:
        with correlated(run.correlation_id):
            await self._drive_in(run, leg, step)

    async def _drive_in(self, run: RunRow, leg: Leg, step: Callable[[], Awaitable[RunResult]]) -> None:
        """Run ``step``; follow handoffs; check guardrails; then answer, pause or fail the run."""
        chat = run.chat
        typing = self.clock.call_later(TYPING_AFTER_S, lambda: self._typing(chat))
        started, outcome = time.perf_counter(), "failed"
        # A graph's nodes answer one after another: only the last answer is the reply, so none is shown growing.
        stream = leg.ctx.stream = self._stream(run) if leg.graph is None else None
        try:
            try:
                result = await step()
                while True:
                    while isinstance(result, HandoffRequest):
                        handed = await self._hand_off(run, leg, result)
                        if handed is None:
                            return
                        leg = handed
                        leg.ctx.stream = stream
                        result = await leg.agent.runner.run(leg.ctx, result.message)
                    if isinstance(result, FinalAnswer):
                        result = await guard(leg, result)
                        following = await self._graph_next(run, leg, result) if leg.graph is not None else None
                        if following is not None and following.message is not None:
                            leg = following
                            result = await leg.agent.runner.run(leg.ctx, following.message)
                            continue
                    break
                outcome = "answered" if isinstance(result, FinalAnswer) else "paused"
            except BaseException:
                if stream is not None:
                    await stream.close()
                raise
        except BudgetExceeded as exc:
            self.trace("error", run, leg.agent.name, message=f"budget: {exc.scope}")
            await self.finish(run, "stopped", leg.prefix, _notice(chat, str(exc)))
            return
        except ModelError as exc:
            log.warning("chat %s: model error in %s: %s", chat, leg.agent.name, exc)
            self.trace("error", run, leg.agent.name, message=f"model error: {exc}")
            text = f"⚠️ The model failed: {exc}. Your message is saved; try again."
            await self.finish(run, "failed", leg.prefix, _notice(chat, text))
            return
        except CheckpointError as exc:
            self.trace("error", run, leg.agent.name, message=f"checkpoint: {exc}")
            await self.finish(run, "failed", [], _notice(chat, f"⚠️ I cannot continue this request: {exc}."))
            return
        finally:
            typing.cancel()
            if self.metrics is not None:
                self.metrics.run_worked(leg.agent.name, outcome, time.perf_counter() - started)
        if isinstance(result, FinalAnswer):
            reply = OutboundMessage(chat=chat, text=result.text or "(no answer)", reply_to=run.reply_to)
            if stream is not None:
                reply = await stream.final(reply)
            await self.finish(run, "done", [*leg.prefix, *result.messages], reply)
        else:
            if stream is not None:
                await stream.interrupt()
            await self.pause(run, leg, result)

    async def _hand_off(self, run: RunRow, leg: Leg, request: HandoffRequest) -> Leg | None:
        """Continue the run with the handoff's target (the runner already checked whitelist, cycle, depth)."""
        chat = run.chat
        target = self.catalog.get(request.target)
        prefix = [*leg.prefix, *request.messages]
        if target is None:
            text = f"⚠️ {leg.agent.name} tried to hand off to {request.target!r}, which is not available."
            await self.finish(run, "failed", prefix, _notice(chat, text))
            return None
        entry = leg.agent.handoff_to(target.name)
        recent: list[str] = []
        if entry is not None and entry.include_context:
            seen = [*leg.ctx.history, request.message, *request.messages]
            recent = recent_lines(seen, self.settings.handoffs.context_messages)
        chain = [*leg.chain, target.name]
        handoff = HandoffContext(
            source=leg.agent.name,
            target=target.name,
            reason=request.reason,
            summary=request.summary,
            context=request.context,
            chain=chain,
            correlation_id=run.correlation_id,
            recent=recent,
            payload=request.payload,
        )
        leg.ctx.tracer.event(
            "handoff",
            agent=leg.agent.name,
            target=target.name,
            status="accepted",
            reason=request.reason,
            payload=request.payload,
        )
        template = self.settings.handoffs.notify
        if template:
            line = template.replace("{from}", leg.agent.name).replace("{to}", target.name)
            await self.delivery.send(_notice(chat, line.replace("{reason}", request.reason)))
        ctx = await self.context(
            run, target, resumed=False, chain=chain, handoff=handoff, query=request.message.text or "", graph=leg.graph
        )
        self.runs.set_run_later(run.id, agent=target.name)
        return Leg(target, ctx, chain, request.message, prefix, handoff, leg.graph)

    # -- pause / finish --------------------------------------------------------------------

    async def pause(self, run: RunRow, leg: Leg, request: InterruptRequest) -> None:
        agent = leg.agent
        chat = run.chat
        interrupt_id, nonce = new_id(), new_nonce()
        choices = prompt_choices(request)
        own = agent.confirm_timeout_s if request.kind == "tool_confirm" else None
        timeout = own or self.settings.interrupts.timeout_for(request.kind)
        shown, payload = request.prompt, request.payload
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
        phase = str(request.state.get("phase", request.kind))
        checkpoint = make_checkpoint(agent.name, agent.kind, phase, request.state, leg.chain)
        if leg.graph is not None:
            checkpoint["graph"] = leg.graph.to_json()
        if leg.handoff is not None or leg.prefix:
            checkpoint["handoff"] = {
                "context": leg.handoff.to_json() if leg.handoff is not None else None,
                "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in leg.prefix],
            }
        outbox_id = await self.runs.pause(run, checkpoint, interrupt, prompt.model_dump_json())
        self.trace("interrupt", run, agent.name, kind=request.kind, status="raised", interrupt_id=interrupt_id)
        self.timers.schedule(interrupt.id, interrupt.expires_at)
        await self.delivery.deliver(outbox_id, prompt, interrupt)

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


def _notice(chat: ChatKey, text: str) -> OutboundMessage:
    return OutboundMessage(chat=chat, text=text, kind="notice")
