"""Resolving a pending interrupt, exactly once, and ending one (expired, cancelled, superseded).

The interrupts table is the source of truth.  A resolution is a conditional
update on ``status = 'pending'``: of two presses (or a press and an expiry)
exactly one wins, and the loser changes nothing.  After it commits, the
prompt is edited to show the outcome and the run resumes from its checkpoint (or, when it ended, finishes with
its open calls closed).  Reading a press or a text into a resolution is :mod:`bot.interrupts.service`; expiry is
:mod:`bot.interrupts.expiry`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from agents.approval import NEVER_GRANTED
from agents.messages import Message, ToolCall
from agents.react import describe_call
from agents.resolutions import PlanDecision, Resolution, ToolDecision, answer_text, unanswered
from agents.state import RunState
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage, Sender
from bot.interrupts.answers import kept_out
from bot.interrupts.expiry import ExpiryTimers
from bot.store.base import StoreError
from bot.store.ports import ChatReads, Runs
from bot.store.retry import DELAYED, until_stored
from bot.store.rows import InterruptRow, RunRow

log = logging.getLogger(__name__)

NOT_PENDING = "This request is no longer pending."
NOT_SAVED = "⚠️ I could not save your answer, so nothing was run; the request is still open. Please answer again."
DENIED_SUPERSEDED = "denied: the user moved on to a new request"
DENIED_CANCELLED = "denied: cancelled by the user"


class PausedRuns(Protocol):
    """The run manager as a resolution needs it (:class:`bot.runs.manager.RunManager`): the chat's settings (its
    grants), the run's trace, and resuming or ending the paused run.  A port, so bot.interrupts does not import
    bot.runs (which imports the interrupts' timers, prompt text and this service)."""

    store: ChatReads

    def trace(self, type: str, run: RunRow, agent: str = "", **fields: Any) -> None: ...

    async def resume(self, run: RunRow, resolution: Resolution, *, running: bool = False) -> None: ...

    async def finish(
        self,
        run: RunRow,
        status: str,
        messages: tuple[Message, ...] | list[Message],
        reply: OutboundMessage | None,
    ) -> None: ...


class Resolver:
    """What ends a pending interrupt: an answer (:meth:`resolve`), or its end without one (:meth:`end`)."""

    def __init__(
        self,
        runs: Runs,
        manager: PausedRuns,
        delivery: Delivery,
        timers: ExpiryTimers,
        handled: Callable[[str], None] | None = None,
    ) -> None:
        """``handled``: told an event's key right after the commit that marks it handled (the web console waits)."""
        self._handled = handled or (lambda _key: None)
        self.runs = runs
        self.manager = manager
        self.delivery = delivery
        self.timers = timers

    # -- resolution -----------------------------------------------------------------------

    async def resolve(
        self,
        row: InterruptRow,
        resolution: Resolution,
        by: Sender,
        *,
        event_key: str | None = None,
        tell: bool = True,
    ) -> bool:
        """Answer ``row`` with ``resolution`` (exactly once) and resume its run; ``tell``: say in the chat when
        it was answered already. An answer to a question that asks for a secret is stored and shown redacted
        (:func:`~bot.interrupts.answers.kept_out`); the run resumed here continues with the answer itself."""
        stored = kept_out(row, resolution)
        try:
            resolved = await until_stored(
                lambda: self.runs.resolve(
                    row, "resolved", stored.to_json(), by.id, run_status="running", event_key=event_key
                ),
                self.timers.clock,
                waiting=self._delayed(row.chat),
            )
        except StoreError as exc:
            # Nothing changed: the request is still pending and the same answer works again.
            log.error("chat %s: could not store the answer to %s: %s", row.chat_key, row.id, exc)
            await self._notice(row.chat, NOT_SAVED)
            return False
        if event_key is not None:
            self._handled(event_key)
        if resolved is None:  # this very press was handled before
            return False
        if not resolved:
            if tell:
                await self._notice(row.chat, NOT_PENDING)
            return False
        self.timers.unschedule(row.id)
        chat = row.chat
        if row.kind == "tool_confirm" and isinstance(resolution, ToolDecision) and resolution.grant:
            names = sorted({c["name"] for c in row.payload.get("calls", [])} - NEVER_GRANTED)
            current = list((await self.manager.store.chat_settings(chat.settings_key)).get("grants", []))
            granted = sorted(set(current) | set(names))
            await self.runs.change_setting(by.id, chat.settings_key, "grants", current or None, granted)
        await self._edit_prompt(row, self._outcome_text(row, stored, by))
        run = await self.runs.paused_run(row.run_id)
        if run is not None:
            self.manager.trace("interrupt", run, kind=row.kind, status="resolved", by=by.id, choice=resolution.choice)
            await self.manager.resume(replace(run, status="running"), resolution, running=True)
        return True

    def _outcome_text(self, row: InterruptRow, resolution: Resolution, by: Sender) -> str:
        who = by.name or by.id
        if isinstance(resolution, ToolDecision):
            approved = set(resolution.approved)
            calls = row.payload.get("calls", [])
            if not approved:
                return f"❌ Denied by {who}."
            if resolution.edited:
                edited = resolution.edited
                ran = "\n".join(
                    "• "
                    + describe_call(ToolCall(id=c["id"], name=c["name"], args=edited.get(c["id"], c["args"])), None)
                    for c in calls
                    if c["id"] in approved
                )
                return f"✏️ Approved by {who} with edited arguments; what runs:\n{ran}"
            if len(approved) == len(calls):
                extra = " (always allowed here from now on)" if resolution.grant else ""
                return f"✅ Approved by {who}{extra}."
            names = ", ".join(c["label"] for c in calls if c["id"] in approved)
            return f"✅ Approved by {who} only: {names}."
        feedback = resolution.feedback if isinstance(resolution, PlanDecision) else None
        answer = answer_text(resolution) or feedback or resolution.choice
        return f"💬 Answered by {who}: {answer}"

    async def end(self, row: InterruptRow, status: str, reason: str, outcome: str) -> bool:
        """Expire, cancel or supersede: the run ends, open calls get ``reason`` as their result."""
        if not await self.runs.resolve(row, status, unanswered(row.kind, reason).to_json(), None):
            return False
        self.timers.unschedule(row.id)
        await self._edit_prompt(row, outcome)
        run = await self.runs.paused_run(row.run_id)
        if run is None:
            return True
        self.manager.trace("interrupt", run, kind=row.kind, status=status)
        if status == "expired" and row.kind == "tool_confirm":
            # An expired confirmation counts as denied: the run goes on without the calls.
            await self.manager.resume(run, unanswered(row.kind, reason))
            return True
        try:
            messages = RunState.load(run.checkpoint).closed_messages(reason)
        except Exception:  # a broken checkpoint must not keep the chat blocked
            log.exception("run %s: cannot close its messages", run.id)
            messages = []
        await self.manager.finish(run, status, messages, None)
        return True

    async def cancel(self, chat: ChatKey, by: Sender) -> bool:
        row = await self.runs.pending(str(chat))
        if row is None:
            return False
        return await self.end(row, "cancelled", DENIED_CANCELLED, f"🚫 Cancelled by {by.name or by.id}.")

    # -- prompts --------------------------------------------------------------------------

    async def _edit_prompt(self, row: InterruptRow, outcome: str) -> None:
        chat = row.chat
        text = f"{row.prompt}\n\n{outcome}"
        if row.prompt_ref is None:
            await self.delivery.send(OutboundMessage(chat=chat, text=outcome, kind="notice"))
            return
        await self.delivery.send(OutboundMessage(chat=chat, text=text, edit_of=row.prompt_ref))

    async def _notice(self, chat: ChatKey, text: str) -> None:
        await self.delivery.send(OutboundMessage(chat=chat, text=text, kind="notice"))

    def _delayed(self, chat: ChatKey) -> Callable[[Exception], None]:
        """Tells the chat, off its path, that its answer waits for the database (a full disk): it is not lost."""

        def tell(_exc: Exception) -> None:
            task = asyncio.ensure_future(self._notice(chat, DELAYED))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

        return tell
