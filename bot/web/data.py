"""What the console shows, read from the store and the gateway's parts (nothing here changes anything).

Every argument, message and answer shown goes through the redaction step (:mod:`bot.redaction`: rows written
before it knew a kind of secret are redacted on the way out) and is made visible as the chat prompt makes it
(:mod:`agents.visible`: zero-width and bidi characters as ``\\uXXXX``); the page templates apply the same to every
other value they print (:func:`bot.web.console.printed`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from agents.messages import Message
from agents.visible import visible, visible_json
from bot.interrupts.console import console_choices
from bot.redaction import redact_text, redact_value
from bot.routing.policy import ROUTING_KEYS, RoutePolicy
from bot.runs.catalog import AgentCatalog
from bot.store.ports import ConsoleReads, EvalRepo, InterruptRepo, RunRepo
from bot.store.rows import InterruptRow
from bot.store.values import utcnow
from bot.tracing.event import TraceEvent
from bot.tracing.recorder import Tracing
from bot.tracing.replay import detail
from bot.tracing.timeline import describe, human_duration, shorten

PAGE = 100
"""Rows per list (chats, runs, messages, audit)."""


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    if moment is None:
        return "-"
    seconds = ((now or utcnow()) - _naive(moment)).total_seconds()
    return human_duration(max(0.0, seconds) * 1000) + " ago"


def until(moment: datetime | None, now: datetime | None = None) -> str:
    if moment is None:
        return "never"
    seconds = (_naive(moment) - (now or utcnow())).total_seconds()
    return "now" if seconds <= 0 else "in " + human_duration(seconds * 1000)


def _naive(moment: datetime | str) -> datetime:
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return moment.replace(tzinfo=None) if moment.tzinfo is not None else moment


@dataclass
class Pending:
    """One request waiting on a person, as the inbox shows it."""

    row: InterruptRow
    agent: str
    age: str
    expires: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    """``tool_confirm``: id, name, risk, the arguments as indented JSON made visible as the chat prompt shows them
    (``args``), and as JSON that still parses for the edit box (``edit``)."""
    plan: list[str] = field(default_factory=list)
    question: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class ChatLine:
    chat_key: str
    last: str
    messages: int
    pending: int


@dataclass
class RunLine:
    id: str
    agent: str
    status: str
    correlation_id: str
    user_id: str
    created: str
    events: list[dict[str, str]] = field(default_factory=list)
    routed: str = ""
    """The message the router chose the agent for (its route trace event), which the *Re-route* button corrects."""


class ConsoleRuns(RunRepo, InterruptRepo, Protocol):
    """Runs and interrupts as the console reads them."""


class ConsoleData:
    def __init__(
        self, store: ConsoleReads, runs: ConsoleRuns, tracing: Tracing, routes: RoutePolicy, evals: EvalRepo
    ) -> None:
        """``evals``: the eval runs the console lists."""
        self.store = store
        self.runs = runs
        self.evals = evals
        self.tracing = tracing
        self.routes = routes

    @property
    def catalog(self) -> AgentCatalog:
        return self.routes.catalog

    # -- inbox -------------------------------------------------------------------------------

    async def inbox(self) -> list[Pending]:
        rows = sorted(await self.runs.all_pending(), key=lambda r: r.created_at, reverse=True)
        agents = await self._agents_of([r.run_id for r in rows])
        return [self.pending(r, agents.get(r.run_id, "?")) for r in rows]

    async def pending_count(self) -> int:
        return await self.store.pending_count()

    async def version(self) -> str:
        """Changes whenever the inbox does (for the live updates): the pending ids."""
        return ",".join(await self.store.pending_ids())

    async def _agents_of(self, run_ids: list[str]) -> dict[str, str]:
        return await self.store.agents_of(run_ids)

    @staticmethod
    def pending(row: InterruptRow, agent: str) -> Pending:
        now = utcnow()
        view = Pending(row=row, agent=agent, age=ago(row.created_at, now), expires=until(row.expires_at, now))
        payload = row.payload
        if row.kind == "tool_confirm":
            view.calls = [
                {
                    "id": str(c["id"]),
                    "name": str(c["name"]),
                    "risk": str(c.get("risk", "")),
                    "args": visible_json(redact_value(c.get("args", {})), indent=2),
                    "edit": visible_json(redact_value(c.get("args", {})), indent=2, spaces=False),
                }
                for c in payload.get("calls", [])
            ]
            view.options = console_choices(row)
        elif row.kind == "plan_approval":
            steps = payload.get("plan", [])
            view.plan = [
                visible(redact_text(s)) if isinstance(s, str) else visible_json(redact_value(s)) for s in steps
            ]
        else:
            view.question = visible(redact_text(str(payload.get("question") or row.prompt)))
            view.options = [(str(label), str(value)) for label, value in row.choices]
        return view

    async def interrupt(self, interrupt_id: str) -> InterruptRow | None:
        return await self.runs.get_interrupt(interrupt_id)

    # -- chats -------------------------------------------------------------------------------

    async def chats(self, query: str = "") -> list[ChatLine]:
        """Chats by last activity; ``query`` finds chats by key or by a word of their conversation."""
        rows = await self.store.chats(query, PAGE)
        pending = await self.store.pending_per_chat()
        now = utcnow()
        lines = [ChatLine(k, ago(at, now), n, pending.pop(k, 0)) for k, at, n in rows]
        if not query:  # a chat whose first request is still waiting has no stored message yet
            lines[:0] = [ChatLine(k, "-", 0, n) for k, n in pending.items()]
        return lines

    async def conversation(self, chat_key: str) -> list[dict[str, str]]:
        out = []
        for role, agent, data, at in await self.store.conversation(chat_key, PAGE):
            try:
                message = Message.model_validate_json(data)
            except ValueError:
                continue
            text = (
                visible(redact_text(message.text))
                if message.text
                else "; ".join(
                    [f"{c.name}({visible_json(redact_value(c.args))})" for c in message.tool_calls]
                    + [f"{r.name} → {visible(redact_text(str(r.content)[:200]))}" for r in message.tool_results]
                )
            )
            out.append({"role": role, "agent": agent, "text": text, "at": str(at)[:19]})
        return out

    async def chat_runs(self, chat_key: str) -> list[RunLine]:
        rows = await self.store.chat_runs(chat_key, PAGE)
        now = utcnow()
        return [RunLine(str(i), str(a), str(s), str(c), str(u), ago(at, now)) for i, a, s, c, u, at in rows]

    async def run(self, run_id: str) -> RunLine | None:
        row = await self.store.run(run_id)
        if row is None:
            return None
        i, a, s, c, u, at, chat = row
        line = RunLine(str(i), str(a), str(s), str(c), str(u), ago(at))
        await self.tracing.flush()
        events = await self.tracing.events(str(c), str(chat))
        line.events = timeline(events)
        route = next((e for e in events if e.type == "route"), None)
        line.routed = str(route.data.get("routed") or "") if route is not None else ""
        return line

    # -- routing -----------------------------------------------------------------------------

    async def routing(self) -> list[tuple[str, str, str]]:
        """(key, effective value, layer) for each routing key (the strategy as set globally)."""
        config, origins = await self.routes.effective_routing(), await self.routes.origins()
        glob = (await self.store.settings_view("*")).get("strategy")
        out = []
        for key in ROUTING_KEYS:
            if key == "strategy" and glob:
                out.append((key, str(glob), "admin (global)"))
                continue
            value: Any = config
            for part in key.split("."):
                value = getattr(value, part)
            out.append((key, json.dumps(value, ensure_ascii=False, default=str), origins[key]))
        return out

    async def chat_strategies(self) -> list[tuple[str, str]]:
        rows = await self.store.chat_strategies()
        return sorted((str(k), str(json.loads(v))) for k, v in rows if k != "*")

    async def audit(self, limit: int = PAGE) -> list[dict[str, Any]]:
        """Recent audited changes, values shortened for a table."""
        out = []
        for entry in await self.runs.audit_log(limit):
            shown = {k: _short(redact_value(v)) for k, v in entry.items() if k in ("old", "new")}
            out.append({**entry, **shown, "at": str(entry["at"])[:19]})
        return out


def _short(value: Any, limit: int = 80) -> str:
    if value is None:
        return ""
    return shorten(visible(value) if isinstance(value, str) else visible_json(value), limit)


def timeline(events: list[TraceEvent]) -> list[dict[str, str]]:
    """A request's events for the page: offset, type, one line, and the detail a replay shows."""
    if not events:
        return []
    start = events[0].at
    return [
        {
            "offset": "+" + human_duration((e.at - start).total_seconds() * 1000),
            "type": e.type,
            "line": describe(e),
            "detail": detail(e),
            "run": e.run_id,
        }
        for e in events
    ]
