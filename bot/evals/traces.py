"""Cases from what really happened: ``bot eval --from-traces --since 7d --agent NAME``.

Each chat with requests since then (touching the agent, when one is named) becomes a case; each request a turn
(its message, read from the history row its run started from, secrets redacted), and each answer to a pause a
turn too (the button's choice, or the text answer, from the interrupt's stored resolution).  A turn expects what
the trace recorded: the agent routed to, exactly the tool calls made (arguments as traced: a value the tracer
redacted or cut short is left out of the comparison), the pause raised, the handoffs, how the run ended.  Run
against a changed agent file or another model, a failed check shows where behaviour changed.

When the chat's stored history holds every model answer of the case (as many as the trace counted model calls),
the case also gets them as its ``script``, so ``--model scripted`` replays the same answers.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from agents.messages import Message
from bot.evals.seat import event_of
from bot.evals.suite import Suite
from bot.routing.llm import transfer_tool_name
from bot.store.ports import ReplaySource, TraceRepo
from bot.tracing.event import TraceEvent
from bot.tracing.recorder import Redactor

MAX_TURNS = 40
GAP_S = 1800.0
"""A chat idle longer than this (seconds) begins a new conversation: a case of its own."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def seconds_of(text: str) -> float:
    """``7d``, ``12h``, ``30m`` → seconds; :class:`ValueError` otherwise."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration like 30m, 12h, 7d or 2w")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _redacted(value: Any) -> bool:
    """A value the tracer replaced (``***``, or ``‹redacted: kind›``) or cut short (``…``)."""
    return isinstance(value, str) and (value == "***" or value.startswith("‹redacted") or value.endswith("…"))


def _clean(args: Any) -> tuple[Any, bool]:
    """Traced arguments without the values the tracer redacted or cut; whether any were left out."""
    if isinstance(args, dict):
        out, cut = {}, False
        for key, value in args.items():
            if _redacted(value):
                cut = True
                continue
            out[key], inner = _clean(value)
            cut = cut or inner
        return out, cut
    return args, False


def _expect(segment: Sequence[TraceEvent], first: bool) -> dict[str, Any]:
    expect: dict[str, Any] = {}
    route = next((e for e in segment if e.type == "route"), None)
    if first and route is not None:
        expect["agent"] = route.agent
    calls: Counter[tuple[str, str, bool]] = Counter()
    for e in segment:
        if e.type == "tool_call":
            args, cut = _clean(e.data.get("arguments") or {})
            calls[(str(e.data.get("tool")), json.dumps(args, sort_keys=True, ensure_ascii=False), cut)] += 1
    if calls:
        expect["tool"] = [
            {"name": name, "args": json.loads(args), "match": "subset" if cut else "exact", "times": n}
            for (name, args, cut), n in calls.items()
        ]
        expect["exact_tools"] = True
    else:
        expect["no_tool"] = True
    raised = [str(e.data.get("kind")) for e in segment if e.type == "interrupt" and e.data.get("status") == "raised"]
    expect["interrupt"] = raised[0] if raised else False
    handoffs = [
        str(e.data.get("target")) for e in segment if e.type == "handoff" and e.data.get("status") == "accepted"
    ]
    expect["handoff"] = handoffs or False
    ends = [str(e.data.get("status")) for e in segment if e.type == "run"]
    if raised:
        expect["status"] = "waiting"
    elif ends:
        expect["status"] = ends[-1]
    return expect


def _turn_of_resolution(resolution: dict[str, Any]) -> dict[str, Any] | None:
    """The turn that gives this answer again (None: it cannot be given in a chat, such as edited arguments)."""
    choice, feedback, answer = resolution.get("choice"), resolution.get("feedback"), resolution.get("answer")
    if choice == "e" or resolution.get("edited"):
        return None
    if feedback:
        return {"user": feedback}
    if choice:
        return {"choice": choice}
    if answer:
        return {"user": answer}
    return None


@dataclass
class Request:
    """One request of a recorded chat, as turns to play again."""

    user: str
    cutoff: int
    """The id of its message in the chat's history."""
    route: TraceEvent
    at: datetime
    turns: list[dict[str, Any]] = field(default_factory=list)
    calls: list[list[TraceEvent]] = field(default_factory=list)
    """The traced model calls (``llm_call``) of each turn."""
    complete: bool = True


class TextRedactor(Protocol):
    def text(self, value: str) -> str: ...


class TraceCases:
    """Reads traces, runs, interrupts and history from a store (read-only) and makes cases of them."""

    def __init__(
        self, traces: TraceRepo, source: ReplaySource, redactor: TextRedactor | None = None, gap: float = GAP_S
    ) -> None:
        """``gap``: seconds a chat was idle that end one conversation (a case) and begin the next."""
        self.traces = traces
        self.source = source
        self.redactor = redactor or Redactor()
        self.gap = gap
        self.notes: list[str] = []
        """Requests and answers left out, and why."""

    async def suite(self, since: datetime, agent: str | None = None, limit: int = 50, name: str = "") -> Suite | None:
        """The cases of chats with requests since ``since`` (touching ``agent``); None when there are none."""
        rows = await self.traces.first_routes(since)
        cases: list[dict[str, Any]] = []
        for chat_key, first in rows:
            if len(cases) >= limit:
                self.notes.append(f"only the first {limit} chats were taken (--limit)")
                break
            events = [event_of(r[1:]) for r in await self.traces.after(chat_key, first - 1)]
            if agent and not any(e.agent == agent or e.data.get("target") == agent for e in events):
                continue
            cases += await self._cases(str(chat_key), events, len(cases) + 1)
        if not cases:
            return None
        about = f" with {agent}" if agent else ""
        return Suite.model_validate(
            {
                "name": name or (f"traces-{agent}" if agent else "traces"),
                "description": f"{len(cases)} conversations{about} since {since:%Y-%m-%d %H:%M} UTC, from traces",
                "cases": cases,
            }
        )

    async def _cases(self, chat_key: str, events: list[TraceEvent], number: int) -> list[dict[str, Any]]:
        """The chat's conversations as cases: its requests, split where the chat was idle longer than ``gap``."""
        by_request: dict[str, list[TraceEvent]] = {}
        for e in events:
            by_request.setdefault(e.correlation_id, []).append(e)
        conversations: list[list[Request]] = []
        last_at: datetime | None = None
        for correlation_id, request in by_request.items():
            if not any(e.type == "route" for e in request):
                continue  # a request that began before ``since``
            played = await self._request(chat_key, correlation_id, request)
            if played is None:
                continue
            if not conversations or (last_at is not None and (request[0].at - last_at).total_seconds() > self.gap):
                conversations.append([])
            conversations[-1].append(played)
            last_at = request[-1].at
        cases: list[dict[str, Any]] = []
        for k, requests in enumerate(conversations):
            case = await self._case(chat_key, requests, number + len(cases), first=k == 0)
            if case is not None:
                cases.append(case)
        return cases

    async def _request(self, chat_key: str, correlation_id: str, request: list[TraceEvent]) -> Request | None:
        """A request's turns: its message, then each answer to one of its pauses (None: it cannot be replayed)."""
        found = await self._message(chat_key, correlation_id)
        if found is None:
            self.notes.append(f"{chat_key}: {correlation_id}: its message is no longer stored; left out")
            return None
        text, user_id, cutoff = found
        route = next(e for e in request if e.type == "route")
        played = Request(user=user_id, cutoff=cutoff, route=route, at=request[0].at)
        seqs = [i for i, e in enumerate(request) if e.type == "interrupt" and e.data.get("status") == "resolved"]
        bounds = [0, *seqs, len(request)]
        for k in range(len(bounds) - 1):
            segment = request[bounds[k] : bounds[k + 1]]
            turn: dict[str, Any] | None
            if k == 0:
                explicit = route.data.get("method") == "explicit" and not text.startswith(f"@{route.agent}")
                turn = {"user": f"@{route.agent} {text}" if explicit else text}
            else:
                turn = await self._answer(request[: bounds[k]], chat_key, correlation_id)
                if turn is None:
                    played.complete = False
                    break
            turn["expect"] = _expect(segment, first=k == 0)
            played.turns.append(turn)
            played.calls.append([e for e in segment if e.type == "llm_call"])
        return played

    async def _case(self, chat_key: str, requests: list[Request], number: int, first: bool) -> dict[str, Any] | None:
        turns = [t for r in requests for t in r.turns]
        if not turns:
            return None
        if len(turns) > MAX_TURNS:
            self.notes.append(f"{chat_key}: only the first {MAX_TURNS} turns of a conversation were taken")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", chat_key).strip("-")[:70] or "chat"
        case: dict[str, Any] = {
            "id": f"{slug}-{number}",
            "description": f"replayed from {chat_key}, {requests[0].at:%Y-%m-%d %H:%M} UTC",
            "user": next((r.user for r in requests if r.user), "eval-user"),
            "turns": turns[:MAX_TURNS],
        }
        if not first:  # what the chat's history held when this conversation began, as the model saw it
            history = [self._redacted_message(m) for m in await self.source.history(chat_key, requests[0].cutoff)]
            if history:
                case["history"] = history
        script = await self._script(chat_key, requests)
        if script is not None and len(turns) <= MAX_TURNS:
            case["script"] = script
        return case

    async def _message(self, chat_key: str, correlation_id: str) -> tuple[str, str, int] | None:
        request = await self.source.request(chat_key, correlation_id)
        if request is None:
            return None
        user_id, cutoff = request
        found = await self.source.message_data(cutoff)
        if found is None:
            return None
        message = Message.model_validate_json(found)
        if message.media:
            self.notes.append(f"{chat_key}: {correlation_id}: its files are not replayed (the text is)")
        return self.redactor.text(message.text or ""), user_id, cutoff

    async def _answer(self, before: list[TraceEvent], chat_key: str, correlation_id: str) -> dict[str, Any] | None:
        raised = [e for e in before if e.type == "interrupt" and e.data.get("status") == "raised"]
        interrupt_id = raised[-1].data.get("interrupt_id") if raised else None
        stored = await self.source.resolution(str(interrupt_id))
        resolution = json.loads(stored) if stored else None
        turn = _turn_of_resolution(resolution) if isinstance(resolution, dict) else None
        if turn is None:
            self.notes.append(f"{chat_key}: {correlation_id}: an answer that cannot be replayed; the rest left out")
            return None
        if "user" in turn:
            turn["user"] = self.redactor.text(str(turn["user"]))
        return turn

    async def _script(self, chat_key: str, requests: list[Request]) -> list[Any] | None:
        """Every model answer of the conversation in the order the model was asked: per request the router's (when
        a model routed it), then each of the agents' (a turn's text, its tool calls, a plan's JSON, a guardrail's
        repair), each with the tokens the trace counted.  Traces keep each answer; an older trace, or one with an
        answer longer than a trace field keeps, takes the agents' answers from the chat's history instead, when it
        holds one per traced call.  The final text of each turn that ended done is also checked, by meaning
        (``answer: {similar: …}``).  None: the answers are not all known."""
        calls = [c for r in requests for segment in r.calls for c in segment]
        traced = all(_usable(c.data.get("answer")) for c in calls)
        stored: list[Message] = []
        if not traced:
            rows = await self.source.answers(chat_key, requests[0].cutoff)
            if len(rows) < len(calls):
                self.notes.append(f"{chat_key}: not every model answer is known (an older trace): no script")
                return None
            stored = [Message.model_validate_json(data) for data in rows]
        history = iter(stored)
        steps: list[Any] = []
        for request in requests:
            routed = request.route.data.get("model_call")
            if isinstance(routed, dict):
                answer: dict[str, Any] = routed["answer"] if _usable(routed.get("answer")) else {}
                if not answer:  # a trace from before answers were kept: the router's choice
                    llm = request.route.data.get("method") == "llm"
                    answer = {"call": transfer_tool_name(request.route.agent)} if llm else {"text": ""}
                steps.append({**answer, "usage": _usage(routed)})
            for turn, segment in zip(request.turns, request.calls, strict=False):
                said = ""
                for event in segment:
                    step = event.data.get("answer") if traced else _step_of(next(history))
                    if not isinstance(step, dict):
                        self.notes.append(f"{chat_key}: a model answer with neither text nor tool calls: no script")
                        return None
                    said = _final_text(step)
                    steps.append({**step, "usage": _usage(event.data)})
                expect = turn["expect"]
                if said.strip() and expect.get("status") == "done" and "answer" not in expect:
                    expect["answer"] = {"similar": self.redactor.text(said)[:2000]}
        return steps

    def _redacted_message(self, data: str) -> dict[str, Any]:
        message = Message.model_validate_json(data)
        if message.text:
            message = message.model_copy(update={"text": self.redactor.text(message.text)})
        return message.model_dump(mode="json", exclude_defaults=True)


def _usable(answer: Any) -> bool:
    """A traced answer that can be given again as it was: one of the step forms, nothing in it cut short."""
    if not isinstance(answer, dict) or len(answer) != 1 or next(iter(answer)) not in ("text", "calls", "json"):
        return False

    def whole(value: Any) -> bool:
        if isinstance(value, str):
            return not value.endswith("…")
        if isinstance(value, dict):
            return all(whole(v) for v in value.values())
        if isinstance(value, list):
            return all(whole(v) for v in value)
        return True

    return whole(answer)


def _final_text(step: dict[str, Any]) -> str:
    """The text a model answer gives the person: its text, or a plan's ``answer`` (none for tool calls)."""
    if "text" in step:
        return str(step["text"] or "")
    found = step.get("json")
    return str(found["answer"]) if isinstance(found, dict) and isinstance(found.get("answer"), str) else ""


def _step_of(message: Message) -> dict[str, Any] | None:
    if message.tool_calls:
        return {"calls": [{"name": c.name, "args": c.args} for c in message.tool_calls]}
    return {"text": message.text} if message.text is not None else None


def _usage(data: dict[str, Any]) -> dict[str, int]:
    return {
        key: int(data.get(key) or 0)
        for key in ("input_tokens", "output_tokens", "cached_tokens")
        if int(data.get(key) or 0) > 0
    }
