"""The run context of one leg of a run: history, tools behind their approval rule, model, tracer, ledger.

Built from ports given at construction: the tool sources (the gateway's own tools and the MCP servers'),
the store's chat state, memory, budgets, tracing.  Nothing here calls back into the composition root.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.approval import ApprovalRequiredToolset, approval_required, approval_rule
from agents.context import NullTracer, RunContext, Tracer
from agents.graph import GraphPosition
from agents.handoffs import HandoffContext
from agents.messages import Message, recent_media
from agents.models.base import Generation, Model
from agents.tools.base import Tool
from agents.tools.ledger import LedgerEntry
from bot.access import is_admin
from bot.config.media import MediaSection
from bot.config.memory import MemorySection
from bot.config.model import ModelSection
from bot.config.settings import ChannelsSection, HandoffsSection, InterruptsSection, StoreSection
from bot.events import ChatKey
from bot.memory.service import Briefing, MemoryService
from bot.ops.budgets import Budgets
from bot.ops.metered import BudgetedModel
from bot.runs.catalog import AgentDef
from bot.runs.ledger import RunLedger
from bot.store.chat_state import ChatState
from bot.store.ports import ChatReads, Runs
from bot.store.rows import RunRow
from bot.tracing.recorder import Tracing

TOOLSETS_KEPT = 256
"""Agent, pool and grants combinations whose chosen tools are kept (all are dropped when it is full)."""
BUDGETED_KEPT = 4096
"""Model, chat and requester combinations whose budgeted model is kept (all are dropped when it is full)."""


class ModelSource(Protocol):
    def get(self, spec: str | None, generation: Generation | None = None) -> Model: ...


class ToolSource(Protocol):
    """Tools an agent could be offered in a chat, before its allow/deny (an MCP pool is one)."""

    async def tools(self, agent: AgentDef, chat: ChatKey | None = None) -> Sequence[Tool]: ...


@dataclass(frozen=True)
class ToolPool:
    """Every tool an agent could be offered: the gateway's own (built-in, gateway, media, jobs) and, from
    ``servers``, its MCP servers' tools (connected lazily; a server that cannot serve is left out and the
    chat gets one notice per outage)."""

    own: Sequence[Tool]
    """Fixed when the pool is made (kept as a tuple: the same object on every message, see
    :meth:`RunContexts._toolset`)."""
    servers: ToolSource | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "own", tuple(self.own))

    async def tools(self, agent: AgentDef, chat: ChatKey | None = None) -> Sequence[Tool]:
        extra = await self.servers.tools(agent, chat) if self.servers is not None else []
        return [*self.own, *extra] if extra else self.own


def own_turns(messages: list[Message], agent: str) -> list[Message]:
    """The turns of ``messages`` an agent answered: each user message with the replies that followed it (the plain
    rule: a run cuts its window with :meth:`bot.store.chat_state.ChatState.own_window`, which walks no further
    than the budget needs)."""
    out: list[Message] = []
    turn: list[Message] = []
    for message in [*messages, Message.user("")]:
        if message.role == "user" and turn and turn[-1].role != "user":
            if any(m.agent == agent for m in turn if m.role != "user"):
                out.extend(turn)
            turn = []
        turn.append(message)
    return out


_NO_GRANTS: frozenset[str] = frozenset()

_Held = tuple[tuple[Tool, ...], Tool | None]
"""What a kept toolset's key names by id: the offered tools and the session tool."""


@dataclass(frozen=True)
class RunConfig:
    """The configuration runs read: these sections of the settings and no other (the sections themselves, so a
    change to one, as tests make, is seen by the next run)."""

    handoffs: HandoffsSection
    """The handoff notice, the context a target sees, the deepest chain."""
    interrupts: InterruptsSection
    """How long each kind of question waits."""
    channels: ChannelsSection
    """Who is an admin (budgets), which channels stream."""
    store: StoreSection
    """``context_chars``: the history a run sees."""
    media: MediaSection
    """``history_items``: the files of the history a run sees."""
    model: ModelSection
    """``repair``: the model that repairs a guardrail's output."""
    memory: MemorySection
    """``budget_tokens``: the recalled memories' share (traced)."""


@dataclass
class RunContexts:
    """Builds the :class:`RunContext` of each leg of a run."""

    config: RunConfig
    store: ChatReads
    runs: Runs
    model: Model
    tools: ToolSource
    emit: Callable[[ChatKey, str], Awaitable[None]]
    """A notice to a chat (progress lines of a runner)."""
    models: ModelSource | None = None
    memory: MemoryService | None = None
    budgets: Budgets | None = None
    tracing: Tracing | None = None
    _toolsets: dict[tuple[Any, ...], tuple[AgentDef, _Held, ApprovalRequiredToolset, bool]] = field(
        default_factory=dict, init=False, repr=False
    )
    _budgeted_models: dict[tuple[int, str, str], BudgetedModel] = field(default_factory=dict, init=False, repr=False)

    async def build(
        self,
        run: RunRow,
        agent: AgentDef,
        *,
        resumed: bool,
        chain: list[str] | None = None,
        handoff: HandoffContext | None = None,
        query: str = "",
        graph: GraphPosition | None = None,
        rerun: list[LedgerEntry] | None = None,
    ) -> RunContext:
        """``query``: the text the run answers (memories matching it are recalled); ``graph``: the position of
        the graph whose node this agent runs (its state goes to the handoff checks and the system prompt);
        ``rerun``: what a first attempt cut off by a crash finished (its calls are not run again)."""
        chat = run.chat
        state = await self.store.chat_state(run.chat_key)
        # The cached settings themselves, read at once (what a copy of them gave: no await in between).
        chat_settings = await self.store.settings_view(chat.settings_key)
        override, grants, chat_model = (
            chat_settings.get("memory"),
            chat_settings.get("grants"),
            chat_settings.get("model"),
        )
        brief = await self._brief(run, chat, agent, query, override, state) if self.memory is not None else Briefing()
        budget = self.config.store.context_chars - len(brief.summary)
        if agent.context_mode == "isolated":
            history = state.own_window(run.history_cutoff, agent.name, budget)
        else:
            history = state.window(run.history_cutoff, budget, brief.upto_id)
        if state.media > self.config.media.history_items:
            history = recent_media(history, self.config.media.history_items)

        async def emit(text: str) -> None:
            await self.emit(chat, text)

        runs_as = agent.runs_as
        # A chat agent gets only its memory tools: no MCP server is woken for it.
        offered = await self.tools.tools(agent, chat) if runs_as.uses_tools else ()
        toolset, recall = self._toolset(agent, offered, brief.memory_on, frozenset(grants) if grants else _NO_GRANTS)
        extra = brief.text(tools=recall)
        if handoff is not None or graph is not None:
            parts = (extra, handoff.render() if handoff is not None else "", graph.brief() if graph is not None else "")
            extra = "\n\n".join(part for part in parts if part)
        repair = self.config.model.repair
        ctx = RunContext(
            chat_key=run.chat_key,
            model=self._budgeted(run, chat, self.model_for(agent, chat_model)),
            repair_model=self._budgeted(run, chat, self.models.get(repair))
            if repair and self.models is not None
            else None,
            history=history,
            emit=emit,
            correlation_id=run.correlation_id,
            user_id=run.user_id,
            run_id=run.id,
            toolset=toolset,
            ledger=RunLedger(self.runs, resumed, rerun),
            system_extra=extra,
            # Handoffs are tools of ReAct agents; chat agents have no tools and plans run their own steps.
            handoffs=tuple(agent.handoffs) if runs_as.hands_off else (),
            handoff_chain=tuple(chain or [agent.name]),
            max_handoff_depth=self.config.handoffs.max_depth,
            tracer=self._tracer(run, agent),
            state=graph.state if graph is not None else {},
        )
        if brief.memories or brief.summary or brief.session_keys:
            ctx.tracer.event("memory", agent=agent.name, **brief.trace_fields(self.config.memory.budget_tokens))
        return ctx

    def _toolset(
        self, agent: AgentDef, offered: Sequence[Tool], memory_on: bool, grants: frozenset[str]
    ) -> tuple[ApprovalRequiredToolset, bool]:
        """The agent's tools of ``offered``, with the memory tools (``memory_on``) and its session tool, behind
        its approval rule, and whether ``recall`` is one of them.

        Kept per agent, tools and grants (the same on nearly every message of a chat): choosing anew matched
        every tool against the agent's allow and deny patterns on every message.  A tuple of tools (the gateway's
        own: the same object on every message) is known by its id, other sequences by their tools' (the pool put
        together and keyed by every tool's id, slower; see bench/README.md).  An entry holds the agent and the
        tools, so no id in its key can be reused while it is kept.
        """
        memory = self.memory
        session = memory.session_tool(agent.session_keys) if memory is not None and agent.session_keys else None
        memory_on = memory is not None and memory_on
        if type(offered) is tuple:
            key: tuple[Any, ...] = (id(agent), grants, memory_on, id(session), id(offered))
        else:
            key = (id(agent), grants, memory_on, id(session), None, *map(id, offered))
        kept = self._toolsets.get(key)
        if kept is not None:
            return kept[2], kept[3]
        pool = list(offered)
        if memory is not None:
            if memory_on:
                pool += memory.tools()
            if session is not None:
                pool.append(session)
        toolset = approval_required(agent.tools(pool), approval_rule(agent.needs_approval, grants))
        recall = any(t.name == "recall" for t in toolset.tools)
        if len(self._toolsets) >= TOOLSETS_KEPT:
            self._toolsets.clear()
        self._toolsets[key] = (agent, (tuple(offered), session), toolset, recall)
        return toolset, recall

    def _tracer(self, run: RunRow, agent: AgentDef) -> Tracer:
        if self.tracing is None:
            return NullTracer()
        own = agent.spec.tracing if agent.spec else None
        return self.tracing.tracer(run.chat_key, run.correlation_id, run.id, agent.name, own)

    def _brief(
        self, run: RunRow, chat: ChatKey, agent: AgentDef, query: str, override: bool | None, state: ChatState
    ) -> Awaitable[Briefing]:
        """Memory's briefing (``self.memory`` is set; a coroutine without one of its own around it): ``chat``:
        the run's; ``override``: the chat's ``/memory on|off``; ``state``: the chat's cached state."""
        assert self.memory is not None
        memory_on = agent.long_term_memory and self.memory.applies(override, run.direct)
        return self.memory.brief(
            chat,
            run.user_id,
            agent.name,
            query,
            memory_on=memory_on,
            shared=agent.context_mode != "isolated",
            session_keys=agent.session_keys,
            state=state,
        )

    def _budgeted(self, run: RunRow, chat: ChatKey, model: Model) -> Model:
        """``model`` spending the budgets of the run's requester and ``chat`` (the run's).

        Kept per model, chat and requester (a budgeted model holds nothing of a run): made anew, with the
        requester's admin check and its payer, it was a noticeable share of a run's context (see bench/README.md).
        An entry holds its model, so no id in its key can be reused while it is kept.
        """
        if self.budgets is None:
            return model
        key = (id(model), chat.settings_key, run.user_id)
        kept = self._budgeted_models.get(key)
        if kept is not None and kept.inner is model:
            return kept
        admin = is_admin(self.config.channels, chat.channel, run.user_id)
        budgeted = BudgetedModel(model, self.budgets, self.budgets.payer(chat, run.user_id, admin))
        if len(self._budgeted_models) >= BUDGETED_KEPT:
            self._budgeted_models.clear()
        self._budgeted_models[key] = budgeted
        return budgeted

    def model_for(self, agent: AgentDef, chat_model: str | None = None) -> Model:
        if self.models is None:
            return self.model
        return self.models.get(agent.model or chat_model, agent.generation)  # its file's model:, else /model's
