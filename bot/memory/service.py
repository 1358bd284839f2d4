"""Memory for runs: what is recalled before a turn, the memory tools, session keys and summaries.

- Long-term memory is per person (:mod:`bot.store.sql.repos.memory`): before each turn the memories that match the
  message (full-text search, fused with embeddings when configured) and then the newest are given to the
  model, as many as fit in ``memory.budget_tokens``; ``remember``, ``recall`` and ``forget`` are tools.
  It is on in direct chats, in groups only when configured or turned on there by an admin.
- Session keys (``memory.session`` in an agent file) are kept per chat and agent (``update_session``).
- The chat's running summary (:mod:`bot.memory.summary`) stands in for the turns that left the window.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from agents.models.base import Model, ModelError
from agents.tools.base import Tool, ToolContext, ToolError, tool
from bot.config.memory import MemorySection
from bot.events import ChatKey
from bot.memory.forgetting import Forgotten, Scrubber
from bot.memory.summary import Summariser, to_fold
from bot.memory.text import estimate_tokens, query_terms
from bot.redaction import find_secret
from bot.store.chat_state import ChatState
from bot.store.ports import ChatReads, MemoryRepo, ScrubRepo
from bot.store.values import MemoryFull, MemoryHit

log = logging.getLogger(__name__)

TOOLSET = "memory"
SESSION_TOOL = "update_session"
TOOL_NAMES = ("remember", "recall", "forget", SESSION_TOOL)
"""The gateway tools this module makes (:func:`bot.runs.tool_names.known_tool_names` reads them)."""
SEARCHED = 20
"""Candidates read per turn: full-text hits and the newest memories (the budget then picks)."""
HEADER = (
    "What you remember about the person you are talking to (#id, date); `recall` finds more, `remember` "
    "keeps a new fact, `forget` removes one when asked:"
)
HEADER_TOKENS = estimate_tokens(HEADER) + 1
"""The header's cost in the budget, with its line break."""


@dataclass
class Briefing:
    """What a run is told besides its history, and what the trace shows of it."""

    memories: list[MemoryHit] = field(default_factory=list)
    tokens: int = 0
    summary: str = ""
    upto_id: int = 0
    """History rows up to this id are in the summary (the window starts after them)."""
    session: dict[str, str] = field(default_factory=dict)
    session_keys: tuple[str, ...] = ()
    memory_on: bool = False

    def text(self, tools: bool = True) -> str:
        """The system prompt's memory part (``tools``: the agent has the memory tools, so it is told of them)."""
        parts = []
        if self.memories:
            header = HEADER if tools else HEADER.split(";", 1)[0] + ":"
            parts.append("\n".join([header, *(_line(m) for m in self.memories)]))
        if self.summary:
            parts.append("Earlier in this conversation (a summary of turns no longer shown):\n" + self.summary)
        if self.session_keys:
            values = "\n".join(f"- {k}: {self.session.get(k) or '(not set)'}" for k in self.session_keys)
            parts.append(f"Session memory of this chat (change it with `update_session`):\n{values}")
        return "\n\n".join(parts)

    def trace_fields(self, budget: int) -> dict[str, object]:
        """For the run's ``memory`` trace event: memory ids and tokens (never their text), the summary's
        length, the session keys' values."""
        fields: dict[str, object] = {"memory": "on" if self.memory_on else "off"}
        if self.memories:
            fields.update(recalled=[m.id for m in self.memories], tokens=self.tokens, budget=budget)
        if self.summary:
            fields["summary_chars"] = len(self.summary)
        if self.session_keys:
            fields["session"] = {k: self.session.get(k, "") for k in self.session_keys}
        return fields


@dataclass(frozen=True)
class Folded:
    """Turns folded into a chat's summary after a run (for the run's trace)."""

    messages: int
    by: str
    summary_chars: int
    duration_ms: float


def _line(hit: MemoryHit) -> str:
    return f"- #{hit.id} {hit.text} ({hit.created_at:%Y-%m-%d})"


def identity_of(chat_key: str, user_id: str) -> str:
    """A person's account: ``channel:user_id``."""
    return f"{chat_key.split(':', 1)[0]}:{user_id}"


class MemoryService:
    def __init__(
        self,
        config: MemorySection,
        store: ChatReads,
        *,
        history_limit: int,
        context_chars: int,
        memories: MemoryRepo,
        scrub: ScrubRepo,
        summary_model: Model | None = None,
        embedder: Model | None = None,
        flush_traces: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``config``: the ``memory`` section; ``store``: chats' settings and state; ``history_limit`` and
        ``context_chars``: the ``store`` section's (how much history is kept, and shown to a run); ``scrub``:
        rewrites stored rows without forgotten facts; ``flush_traces``: writes the buffered trace events (a forget
        scrubs them from the stored ones)."""
        self.config = config
        self.history_limit = history_limit
        self.context_chars = context_chars
        self.store = store
        self.memories = memories
        self.summariser = Summariser(summary_model, self.config.summary.max_chars)
        self._fold_room = max(self.context_chars - self.config.summary.max_chars, self.context_chars // 2)
        """Characters of history the summary does not cover that stay unfolded."""
        self._fold_most = self.history_limit * 3 // 4
        """Messages the summary does not cover that stay unfolded."""
        self.embedder = embedder
        self.scrubber = Scrubber(scrub)
        self.flush_traces = flush_traces
        self._session_tools: dict[tuple[str, ...], Tool] = {}
        self._tools = self._make_tools()

    # -- where it applies ------------------------------------------------------------------

    async def enabled(self, chat: ChatKey, direct: bool) -> bool:
        """Long-term memory in this chat (see :meth:`applies`)."""
        return self.applies((await self.store.settings_view(chat.settings_key)).get("memory"), direct)

    def applies(self, override: bool | None, direct: bool) -> bool:
        """Long-term memory: an admin's ``/memory on|off`` in the chat (``override``), else on in direct chats
        (and in groups when ``memory.groups``)."""
        if not self.config.enabled:
            return False
        if override is not None:
            return bool(override)
        return direct or self.config.groups

    async def person(self, chat_key: str, user_id: str) -> str:
        return await self.memories.person(identity_of(chat_key, user_id))

    # -- before a turn -----------------------------------------------------------------------

    async def brief(
        self,
        chat: ChatKey,
        user_id: str,
        agent: str,
        text: str,
        *,
        memory_on: bool,
        shared: bool,
        session_keys: Sequence[str] = (),
        state: ChatState | None = None,
    ) -> Briefing:
        """What to tell the agent before this turn (``shared``: it sees the chat's history, so its summary).

        ``state``: the chat's cached state when the caller has it: a summary already read is taken from it (the
        store's cached state is read once for a run, not twice; see bench/README.md)."""
        brief = Briefing(memory_on=memory_on, session_keys=tuple(session_keys))
        key = str(chat)
        if memory_on:
            identity = identity_of(key, user_id)
            # Most people are known to have no memories: nothing to recall (no coroutine for it either).
            if self.memories.known_empty(identity) is None:
                _, candidates = await self._recall(identity, text)
                if candidates:  # nothing to fit in the budget without
                    brief.memories, brief.tokens = self._within_budget(candidates)
        if shared and self.config.summary.enabled:
            if state is not None and state.summary is not None:
                brief.summary, brief.upto_id = state.summary, state.summary_upto
            else:
                brief.summary, brief.upto_id = await self.memories.summary(key)
        if session_keys:
            brief.session = await self.memories.session(key, agent)
        return brief

    async def _recall(self, identity: str, text: str) -> tuple[str, list[MemoryHit]]:
        """The person, and the memories matching ``text`` (full text, and embeddings when configured) followed
        by the newest."""
        person = self.memories.known_empty(identity)
        if person is not None:
            return person, []
        person, hits = await self.memories.recall(identity, query_terms(text), SEARCHED)
        if self.embedder is not None and hits:
            found = await self._fused(person, text, [h for h in hits if h.score])
            seen = {m.id for m in found}
            hits = [*found, *(h for h in hits if h.id not in seen)]
        return person, hits

    def _within_budget(self, candidates: list[MemoryHit]) -> tuple[list[MemoryHit], int]:
        budget = self.config.budget_tokens
        used = HEADER_TOKENS
        chosen: list[MemoryHit] = []
        for hit in candidates:
            cost = estimate_tokens(_line(hit)) + 1
            if used + cost > budget:
                continue  # a shorter one further down may still fit
            chosen.append(hit)
            used += cost
        return chosen, used if chosen else 0

    async def _fused(self, person: str, text: str, found: list[MemoryHit]) -> list[MemoryHit]:
        """Full-text hits and embedding neighbours merged by reciprocal rank."""
        query = await self._vector(text, "the message: full-text recall only")
        if query is None or self.embedder is None:
            return found
        scored = sorted(
            ((_cosine(query, v), i) for i, v in await self.memories.vectors(person, self.embedder.name)),
            reverse=True,
        )
        near = [i for score, i in scored[:SEARCHED] if score > 0]
        ranks: dict[int, float] = {}
        for ranking in ([m.id for m in found], near):
            for rank, memory_id in enumerate(ranking):
                ranks[memory_id] = ranks.get(memory_id, 0.0) + 1 / (60 + rank)
        by_id = {m.id: m for m in found}
        missing = [i for i in near if i not in by_id]
        by_id.update({m.id: m for m in await self.memories.get(person, missing)})
        order = sorted(ranks, key=lambda i: -ranks[i])
        return [replace(by_id[i], score=ranks[i]) for i in order if i in by_id]

    # -- after a turn ------------------------------------------------------------------------

    async def after_run(self, chat_key: str) -> Folded | None:
        """Fold the turns that left the window into the chat's summary (None when they still fit)."""
        if not self.config.summary.enabled:
            return None
        state = await self.store.chat_state(chat_key)
        room, most = self._fold_room, self._fold_most
        if state.total - state.covered_size <= room and len(state.ids) - state.covered <= most:
            # What the summary does not cover fits (the common case: nothing is read or copied).  Until the
            # summary is read, ``covered`` is 0: the whole history is counted.
            return None
        summary, upto = await self.memories.summary(chat_key)
        fold = to_fold(state.ids, state.messages, state.sizes, upto, room, most)
        if fold is None:
            return None
        began = time.monotonic()
        folded = await self.summariser.fold(summary, fold.messages)
        await self.memories.set_summary(chat_key, folded, fold.upto_id)
        log.info("chat %s: %d messages summarised by %s", chat_key, len(fold.messages), self.summariser.name)
        return Folded(len(fold.messages), self.summariser.name, len(folded), (time.monotonic() - began) * 1000)

    async def forget_chat(self, chat_key: str) -> None:
        """``/reset``: the chat's summary and session keys go with its history."""
        await self.memories.forget_chat(chat_key)

    # -- forgetting --------------------------------------------------------------------------

    async def forget(self, chat_key: str, user_id: str, ids: Sequence[int] | None) -> Forgotten:
        """Delete the person's memories ``ids`` (None: all) and remove them from what is stored about the
        requests of every account of the person (:mod:`bot.memory.forgetting`)."""
        person = await self.person(chat_key, user_id)
        facts = await (self.memories.get(person, ids) if ids is not None else self.memories.newest(person, 1 << 30))
        deleted = await self.memories.delete(person, ids)
        if not deleted:
            return Forgotten()
        accounts = await self.memories.identities(person) or [person]
        chats = await self.scrubber.chats_of(accounts) | {m.source for m in facts if m.source}
        if self.flush_traces is not None:
            await self.flush_traces()
        report = await self.scrubber.scrub(chats, [m.text for m in facts])
        report.memories = deleted
        return report

    async def unlink(self, chat_key: str, user_id: str) -> Forgotten | None:
        """Detach the account from its person (None: it was not linked). The account starts with no memories, so
        the facts it got from the other accounts (remembered in their chats) leave its requests' rows too."""
        identity = identity_of(chat_key, user_id)
        person = await self.memories.person(identity)
        facts = await self.memories.newest(person, 1 << 30)
        if not await self.memories.unlink(identity):
            return None
        own = await self.scrubber.chats_of([identity])
        theirs = [m.text for m in facts if m.source not in own]
        if not theirs:
            return Forgotten(chats=len(own))
        if self.flush_traces is not None:
            await self.flush_traces()
        return await self.scrubber.scrub(own, theirs)

    # -- tools -----------------------------------------------------------------------------

    async def remember_text(self, chat_key: str, user_id: str, fact: str) -> tuple[int, bool]:
        fact = " ".join(fact.split())
        if not fact:
            raise ToolError("nothing to remember: the fact is empty")
        if len(fact) > self.config.max_chars:
            raise ToolError(f"too long to remember ({len(fact)} characters, at most {self.config.max_chars})")
        if (kind := find_secret(fact)) is not None:
            raise ToolError(
                f"that looks like a password, key or card number ({kind}): secrets are never stored in memory"
            )
        person = await self.person(chat_key, user_id)
        try:
            memory_id, new = await self.memories.add(person, fact, chat_key, self.config.max_items)
        except MemoryFull:
            raise ToolError(
                f"memory is full ({self.config.max_items} facts): ask the user what to forget (/memory)"
            ) from None
        if new and self.embedder is not None:
            await self._embed(memory_id, person, fact)
        return memory_id, new

    async def _embed(self, memory_id: int, person: str, fact: str) -> None:
        vector = await self._vector(fact, f"memory #{memory_id}: kept without one, full-text search finds it")
        if vector is not None and self.embedder is not None:
            await self.memories.put_vector(memory_id, person, self.embedder.name, vector)

    async def _vector(self, text: str, failing: str) -> list[float] | None:
        """The embedding of ``text`` (None, logged with ``failing``, when the embedder fails or is slow)."""
        if self.embedder is None:
            return None
        try:
            async with asyncio.timeout(self.config.embeddings.timeout_s):
                [vector] = await self.embedder.embed([text])
        except (ModelError, TimeoutError, ValueError) as exc:
            log.warning("could not embed %s (%s)", failing, exc)
            return None
        return vector

    def tools(self) -> list[Tool]:
        """``remember``, ``recall`` and ``forget`` (built once: a tool's schema costs milliseconds to make)."""
        return list(self._tools)

    def _make_tools(self) -> list[Tool]:
        @tool(risk="low", name=TOOL_NAMES[0])
        async def remember(ctx: ToolContext, fact: str) -> str:
            """Remember a fact about the user for later conversations, in any chat: a name, preference, plan or
            decision they told you. One short sentence per fact, in their words. Never passwords or keys."""
            memory_id, new = await self.remember_text(ctx.chat_key, ctx.user_id, fact)
            return f"remembered as #{memory_id}" if new else f"already remembered as #{memory_id}"

        @tool(risk="safe", name=TOOL_NAMES[1])
        async def recall(ctx: ToolContext, query: str, limit: int = 5) -> str:
            """Search what you remember about the user (more than you were shown), by words of the query."""
            _, hits = await self._recall(identity_of(ctx.chat_key, ctx.user_id), query)
            hits = hits[: max(1, min(limit, 20))]
            if not hits:
                return "nothing remembered about the user yet"
            return "\n".join(_line(h) for h in hits)

        @tool(risk="low", name=TOOL_NAMES[2])
        async def forget(ctx: ToolContext, id: int) -> str:
            """Forget one memory by its number (#id), when the user asks you to."""
            if not (await self.forget(ctx.chat_key, ctx.user_id, [id])).memories:
                raise ToolError(f"there is no memory #{id} of this user")
            return f"forgot #{id}"

        return [replace(t, toolset=TOOLSET) for t in (remember, recall, forget)]

    def session_tool(self, keys: Sequence[str]) -> Tool:
        """``update_session`` for an agent with these session keys (one tool per set of keys)."""
        wanted = tuple(keys)
        if wanted not in self._session_tools:

            @tool(risk="safe", name=SESSION_TOOL)
            async def update_session(ctx: ToolContext, key: str, value: str) -> str:
                """Set a session memory key of this chat (kept across turns until changed; empty value clears it)."""
                if key not in keys:
                    raise ToolError(f"unknown session key {key!r}: one of {', '.join(keys)}")
                await self.memories.set_session(ctx.chat_key, ctx.agent, key, value.strip()[:2000], ctx.run_id)
                return f"{key} set" if value.strip() else f"{key} cleared"

            schema = dict(update_session.parameters)
            schema["properties"] = {**schema["properties"], "key": {"type": "string", "enum": list(keys)}}
            self._session_tools[wanted] = replace(update_session, parameters=schema, toolset=TOOLSET + ".session")
        return self._session_tools[wanted]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0
