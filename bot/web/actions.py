"""What an admin does in the console, on the same path as a chat's own presses.

An answer to a pending request becomes a button press (an :class:`~bot.events.Action` carrying
:class:`~bot.events.ConsoleInput`) submitted to the inbox like a platform's, so the chat's turn resolves it
exactly as a platform press: whichever of the two comes first wins (a conditional update), the run resumes
where the chat's events are handled, and the loser is told.  The POST awaits a future that the handling commit
resolves (:class:`~bot.gateway.settled.HandledEvents`), then reads the outcome from the row once; scaled out
(handled by a worker elsewhere) it looks at the row until it changes.
Edited arguments are checked against the tool's schema here, before anything is sent, and again before
they run.  Every action is audited with the web user.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.tools.base import Tool, ToolError
from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import Action, ChatKey, ConsoleInput, Sender, event_key
from bot.ids import new_id
from bot.inbox import Receipt
from bot.interrupts.console import console_offers, console_refusal
from bot.interrupts.text import encode_payload
from bot.retry import Backoff, retry
from bot.routing import STRATEGIES, corrections
from bot.routing.policy import GLOBAL, RoutePolicy
from bot.store.ports import ChatStore, Runs
from bot.store.rows import InterruptRow
from bot.web.auth import WebUserSession

log = logging.getLogger(__name__)

Submit = Callable[[Action], Awaitable[Receipt]]
ToolsOf = Callable[[str], Awaitable[Sequence[Tool]]]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    status: int = 200
    """The HTTP status to answer with when not ok: 409 answered already, 422 the input, 403 not allowed."""


BUSY = Outcome(True, "Sent: it is applied in the chat's turn (the chat is busy).")
LOOKS = Backoff(first_s=0.005, cap_s=0.25)
"""Scaled out, the row is looked at again after 5 ms (a chat that is not busy resolves a press in a few
milliseconds), the waits doubling up to a quarter of a second."""


class NotYet(Exception):
    """The press is not handled yet (looked at again)."""


class Handled(Protocol):
    """Futures resolved by the commit that marks an event handled (:class:`~bot.gateway.settled.HandledEvents`)."""

    def expect(self, key: str) -> asyncio.Future[None]: ...

    async def wait(self, future: asyncio.Future[None], key: str, timeout: float) -> bool: ...

    def forget(self, key: str) -> None: ...


class ConsoleActions:
    def __init__(
        self,
        store: ChatStore,
        runs: Runs,
        submit: Submit,
        tools_of: ToolsOf,
        *,
        handled: Handled | None = None,
        wait_s: float = 10.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``submit``: the inbox's; ``handled``: resolves a future when a press is handled here (None: scaled
        out, the row is looked at until it changes, on ``clock``)."""
        self.clock = clock
        self.store = store
        self.runs = runs
        self.submit = submit
        self.tools_of = tools_of
        self.handled = handled
        self.wait_s = wait_s

    async def answer(
        self,
        session: WebUserSession,
        interrupt_id: str,
        nonce: str,
        choice: str,
        *,
        text: str | None = None,
        arguments: dict[str, str] | None = None,
    ) -> Outcome:
        row = await self.runs.get_interrupt(interrupt_id)
        if row is None:
            return Outcome(False, "There is no such request.", 404)
        name = f"web.{row.kind}"
        outcome = await self._answer(session, row, nonce, choice, text, arguments or {})
        await self.audit(
            session,
            row.chat.settings_key,
            name,
            {"interrupt": row.id, "choice": choice},
            "done" if outcome.ok else f"refused: {outcome.message}",
        )
        return outcome

    async def _answer(
        self,
        session: WebUserSession,
        row: InterruptRow,
        nonce: str,
        choice: str,
        text: str | None,
        raw: dict[str, str],
    ) -> Outcome:
        if row.status != "pending":
            return Outcome(False, answered_already(row), 409)
        if nonce != row.nonce:
            return Outcome(False, "This page showed an older version of the request; look again.", 409)
        console = ConsoleInput(user=session.user, text=(text or "").strip() or None)
        if choice == "e" and choice in console_offers(row):
            problem, edited = await self._edited(row, raw)
            if problem:
                return Outcome(False, problem, 422)
            if edited:
                console = console.model_copy(update={"arguments": edited})
            else:
                choice = "a"  # nothing changed: a plain approval
        # The chat's turn checks the same again (it is authoritative); here it answers at once.
        if refusal := console_refusal(row, choice, console):
            return Outcome(False, refusal, 422)
        action = Action(
            id=f"web-{new_id()}",
            chat=row.chat,
            sender=Sender(id=session.actor, name=f"{session.user} (web)"),
            payload=encode_payload(row.id, row.nonce, choice),
            console=console,
        )
        key = event_key(action)
        future = self.handled.expect(key) if self.handled is not None else None
        try:
            receipt = await self.submit(action)
        except Exception as exc:  # the store or the bus refused it: nothing is lost, the request still waits
            if self.handled is not None:
                self.handled.forget(key)
            log.warning("web console: could not hand on an answer to %s: %s", row.id, exc)
            return Outcome(
                False,
                f"The gateway could not take the answer just now ({exc}). If it was stored it is applied shortly; "
                "look at the inbox again before answering once more.",
                503,
            )
        if receipt is not Receipt.ACCEPTED:  # the intake did not take it: no longer an admin here
            if self.handled is not None:
                self.handled.forget(key)
            return Outcome(False, "You may not answer requests here any more.", 403)
        if self.handled is None or future is None:
            return await self._looked_at(row.id, key, session.actor)
        return await self._awaited(self.handled, future, row.id, key, session.actor)

    async def _edited(self, row: InterruptRow, raw: dict[str, str]) -> tuple[str | None, dict[str, dict[str, Any]]]:
        """The calls whose arguments changed, parsed and checked against their tools' schemas."""
        run = await self.runs.get_run(row.run_id)
        tools = {t.name: t for t in await self.tools_of(run.agent if run is not None else "")}
        edited: dict[str, dict[str, Any]] = {}
        for call in row.payload.get("calls", []):
            call_id, name = str(call["id"]), str(call["name"])
            if call_id not in raw:
                continue
            try:
                args = json.loads(raw[call_id])
            except ValueError as exc:
                return f"{name}: the arguments are not JSON ({exc}).", {}
            if not isinstance(args, dict):
                return f"{name}: the arguments must be a JSON object.", {}
            if args == call.get("args"):
                continue
            tool = tools.get(name)
            if tool is None:
                return f"{name}: this tool is not available any more, so edited arguments cannot be checked.", {}
            try:
                tool.validate(args)
            except ToolError as exc:
                return f"{exc}. Nothing was sent; the request is still waiting.", {}
            edited[call_id] = args
        return None, edited

    async def _outcome(self, interrupt_id: str, actor: str, handled: bool) -> Outcome | None:
        """What became of the press: answered (by whom), or ``handled`` and refused; None: not yet handled."""
        row = await self.runs.get_interrupt(interrupt_id)
        if row is not None and row.status != "pending":
            if row.resolved_by == actor:
                return Outcome(True, f"Done: {row.kind.replace('_', ' ')} answered.")
            return Outcome(False, answered_already(row), 409)
        if handled:  # handled and refused in the chat's turn
            return Outcome(False, "The chat refused this answer; the request is still waiting.", 409)
        return None

    async def _awaited(
        self, handled: Handled, future: asyncio.Future[None], interrupt_id: str, key: str, actor: str
    ) -> Outcome:
        """Wait (bounded) for the commit that marks the press handled, then read what became of it once."""
        if not await handled.wait(future, key, self.wait_s):
            return await self._outcome(interrupt_id, actor, False) or BUSY
        # The resolution and the press's mark are one transaction: a row still pending means it was refused.
        status = await self.store.event_status(key)
        return await self._outcome(interrupt_id, actor, status == "done") or BUSY

    async def _looked_at(self, interrupt_id: str, key: str, actor: str) -> Outcome:
        """Scaled out, the press is handled by a worker elsewhere: look at the row (bounded) until it changes."""
        deadline = self.clock.monotonic() + self.wait_s

        async def look() -> Outcome:
            handled = await self.store.event_status(key) == "done"
            # Read after the press's status: it is marked handled in the resolution's own transaction.
            outcome = await self._outcome(interrupt_id, actor, handled)
            if outcome is None:
                raise NotYet
            return outcome

        def again(exc: Exception, attempt: int) -> float | None:
            return LOOKS.delay(attempt) if isinstance(exc, NotYet) and self.clock.monotonic() < deadline else None

        try:
            return await retry(look, again, clock=self.clock)
        except NotYet:
            return BUSY

    async def strategy(self, session: WebUserSession, scope: str, value: str) -> Outcome:
        """Set (or with ``reset`` remove) the strategy globally (``*``) or for one chat, audited like ``/strategy``."""
        if scope != GLOBAL:
            try:
                scope = ChatKey.parse(scope).settings_key
            except ValueError as exc:
                return Outcome(False, str(exc), 422)
        if value != "reset" and value not in STRATEGIES:
            return Outcome(False, f"Unknown strategy {value!r}: one of {', '.join(STRATEGIES)} or reset.", 422)
        old = (await self.store.chat_settings(scope)).get("strategy")
        new = None if value == "reset" else value
        await self.runs.change_setting(session.actor, scope, "strategy", old, new)
        where = "globally" if scope == GLOBAL else f"for {scope}"
        return Outcome(True, f"Strategy {where}: {new or 'override removed'}.")

    async def reroute(self, session: WebUserSession, routes: RoutePolicy, agent: str, text: str) -> Outcome:
        """A run's routed ``text`` was for ``agent``: store the correction, audited like ``/route AGENT``."""
        if not text:
            return Outcome(False, "This run has no routed message to correct.", 422)
        if agent not in routes.catalog.agents:
            return Outcome(False, f"Unknown agent {agent!r}.", 422)
        done = await corrections.store(routes, self.runs.change_setting, session.actor, agent, text)
        note = "already an example of" if done.unchanged else "now an example of"
        return Outcome(
            True, f"The message is {note} @{agent} (correction {done.correction.id}): messages like it go there."
        )

    async def audit(self, session: WebUserSession | str, scope: str, name: str, old: Any, new: Any) -> None:
        actor = session if isinstance(session, str) else session.actor
        await self.runs.audit(actor, scope, name, old, new)


def answered_already(row: InterruptRow) -> str:
    by = row.resolved_by or "nobody"
    by = by if by.startswith("web:") else f"{by} in {row.chat.channel}"
    if row.status == "resolved":
        return f"This request was already answered by {by}; your action was not applied."
    return f"This request is no longer pending ({row.status}); your action was not applied."
