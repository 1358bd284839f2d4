"""Interrupts: resolving a pause by button or text, exactly once; expiry; cancel.

The interrupts table is the source of truth.  A resolution is a conditional
update on ``status = 'pending'``: of two presses (or a press and an expiry)
exactly one wins, and the loser changes nothing.  After it commits, the
prompt is edited to show the outcome and the run resumes from its checkpoint.
Expiry runs on the clock's timers (one per interrupt, :class:`~bot.interrupts.expiry.ExpiryTimers`),
reconciled from the table at start-up; what expired while the gateway was
down expires at start-up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from agents.approval import NEVER_GRANTED
from agents.messages import Message, ToolCall
from agents.react import describe_call
from agents.resolutions import Answer, PlanDecision, Resolution, ToolDecision, answer_text, unanswered
from agents.state import RunState
from bot.access import AccessPolicy
from bot.delivery import Delivery
from bot.events import Action, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.fencing import NO_FENCES, Fences, LeaseLost, fenced
from bot.interrupts.answers import kept_out
from bot.interrupts.console import console_refusal, console_resolution
from bot.interrupts.expiry import ExpiryTimers
from bot.interrupts.text import SHOW_ALL, buttons_for, parse_payload, yes_no
from bot.store.base import EventNotStored, StoreError
from bot.store.ports import ChatReads, Runs
from bot.store.retry import DELAYED, until_stored
from bot.store.rows import InterruptRow, RunRow

log = logging.getLogger(__name__)

NOT_PENDING = "This request is no longer pending."
NOT_YOURS = "Only the person who was asked (or an admin) can answer this."
GRANT_IS_ADMINS = (
    "In a group only an admin can always allow a tool (it would skip confirmations for everyone); Approve runs it once."
)
NOT_SAVED = "⚠️ I could not save your answer, so nothing was run; the request is still open. Please answer again."
DENIED_EXPIRED = "denied: not confirmed in time"
DENIED_SUPERSEDED = "denied: the user moved on to a new request"
DENIED_CANCELLED = "denied: cancelled by the user"


@dataclass
class TextOutcome:
    """What a text reply did to a pending interrupt."""

    handled: bool
    """True: the text was consumed (an answer, a re-prompt); False: treat it as a new request."""


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


class InterruptService:
    """Everything that ends a pending interrupt."""

    def __init__(
        self,
        runs: Runs,
        manager: PausedRuns,
        delivery: Delivery,
        timers: ExpiryTimers,
        fences: Fences = NO_FENCES,
        handled: Callable[[str], None] | None = None,
    ) -> None:
        """``fences``: an expiry acts for its chat only while this process holds the chat's partition;
        ``handled``: told an event's key right after the commit that marks it handled (the web console waits)."""
        self._handled = handled or (lambda _key: None)
        self.runs = runs
        self.manager = manager
        self.delivery = delivery
        self.timers = timers
        self.fences = fences
        self._expiring: set[asyncio.Task[None]] = set()
        self._watcher: asyncio.Task[None] | None = None

    # -- buttons --------------------------------------------------------------------------

    async def check_press(self, action: Action) -> str | None:
        """Why a press would be refused (a short text an adapter can show as a toast), or None.

        Adapters call this before publishing the press, to answer the platform at once;
        :meth:`on_action` repeats the check in the chat's turn, where it is authoritative.
        """
        refusal, _row, _choice = await self._check(action)
        return refusal

    async def _check(self, action: Action) -> tuple[str | None, InterruptRow | None, str]:
        press = parse_payload(action.payload)
        if press is None:
            return NOT_PENDING, None, ""
        # The chat's pending interrupt is cached; a payload naming any other is not pending
        # (at most one per chat), so forged and stale presses cost no read either.
        row = await self.runs.pending(str(action.chat))
        if row is None or row.id != press.interrupt_id or row.nonce != press.nonce:
            return NOT_PENDING, None, ""
        if not self._may_answer(row, action.sender):
            return NOT_YOURS, row, press.choice
        if press.choice == "g" and not await self._may_grant(row, action.sender):
            return GRANT_IS_ADMINS, row, press.choice
        if action.console is not None:
            return console_refusal(row, press.choice, action.console), row, press.choice
        if press.choice not in {value for _label, value in row.choices}:
            return NOT_PENDING, row, press.choice
        return None, row, press.choice

    async def on_action(self, action: Action, event_key: str | None = None) -> None:
        """A button press, in the chat's turn.  ``event_key`` de-duplicates it (platforms redeliver):
        recorded with the resolution in one write, or alone when the press is refused."""
        refusal, row, choice = await self._check(action)
        web = action.console is not None
        if refusal is not None or row is None:
            # The console reads the outcome from the row; the chat hears only about its own presses.
            if (event_key is None or await self._first_time(event_key, action.chat)) and not web:
                await self._notice(action.chat, refusal or NOT_PENDING)
            return
        if choice == SHOW_ALL:
            if event_key is None or await self._first_time(event_key, action.chat):
                await self.show_all(row)
            return
        resolution = self._resolution(row, choice)
        if action.console is not None:
            resolution = console_resolution(row, choice, action.console, resolution)
        await self.resolve(row, resolution, action.sender, event_key=event_key, tell=not web)

    async def show_all(self, row: InterruptRow) -> None:
        """A confirmation too long for one message: send all of it, then the real choices under it.

        Approve exists only from here on (the locked prompt offered Show all and Deny), so
        nobody approves arguments they could not see.  The row learns its new choices before
        the new buttons go out, so a press on them is never refused as stale.
        """
        full = str(row.payload.get("full_text") or row.prompt)
        choices = [(str(label), str(value)) for label, value in row.payload.get("full_choices") or row.choices]
        chat = row.chat
        if await self.delivery.send(OutboundMessage(chat=chat, text=full)) is None:
            await self._notice(chat, "⚠️ I could not show the whole request; it is still waiting. Press Show all again.")
            return
        old_prompt, old_ref = row.prompt, row.prompt_ref
        text = "☝️ That is everything I would run: " + ", ".join(c["name"] for c in row.payload.get("calls", [])) + "."
        if not await self.runs.unlock(row, choices, text):
            await self._notice(chat, NOT_PENDING)
            return
        prompt = OutboundMessage(
            chat=chat,
            text=text + "\n(Press a button, or reply yes / no.)",
            buttons=buttons_for(row.id, row.nonce, choices),
        )
        ref = await self.delivery.send(prompt)
        self.runs.set_prompt_ref(row, ref)
        if old_ref is not None:  # the preview loses its buttons
            await self.delivery.send(
                OutboundMessage(chat=chat, text=f"{old_prompt}\n\n📄 Shown in full below.", edit_of=old_ref)
            )

    async def show_all_again(self, channels: set[str]) -> None:
        """Send every pending prompt of chats on ``channels`` again (channels that forget their messages)."""
        for row in await self.runs.all_pending() if channels else []:
            if row.chat.channel in channels:
                await self.show_again(row)

    async def show_again(self, row: InterruptRow) -> None:
        """Send a pending prompt again, with its buttons (``/pending``, or a console after a restart):
        its outcome will be shown on this copy."""
        chat = row.chat
        choices = [(str(label), str(value)) for label, value in row.choices]
        hint = "\n(Press a button, or reply yes / no.)" if row.kind != "ask_user" else "\n(Reply with your answer.)"
        message = OutboundMessage(chat=chat, text=row.prompt + hint, buttons=buttons_for(row.id, row.nonce, choices))
        ref = await self.delivery.send(message)
        if ref is not None:
            self.runs.set_prompt_ref(row, ref)

    async def _first_time(self, event_key: str, chat: ChatKey) -> bool:
        try:
            first = await until_stored(
                lambda: self.runs.store.accept(event_key, str(chat), None),
                self.timers.clock,
                waiting=self._delayed(chat),
            )
            self._handled(event_key)
            return first
        except EventNotStored:  # the press itself was not stored: the platform was told, nothing is said here
            return False
        except StoreError as exc:
            log.error("chat %s: could not record a button press: %s", chat, exc)
            await self._notice(chat, NOT_SAVED)
            return False

    def _delayed(self, chat: ChatKey) -> Callable[[Exception], None]:
        """Tells the chat, off its path, that its answer waits for the database (a full disk): it is not lost."""

        def tell(_exc: Exception) -> None:
            task = asyncio.ensure_future(self._notice(chat, DELAYED))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

        return tell

    async def _may_grant(self, row: InterruptRow, sender: Sender) -> bool:
        """Whether ``sender`` may "always allow": it turns confirmations off for everyone in the chat, so in a
        group it is an admin's press."""
        group = row.payload.get("group")
        if group is None and not sender.is_admin:  # a row from before the flag: the run knows its chat
            run = await self.runs.paused_run(row.run_id)
            group = run is None or not run.direct
        return AccessPolicy.may_change_chat(sender, not group)

    @staticmethod
    def _may_answer(row: InterruptRow, sender: Sender) -> bool:
        return AccessPolicy.may_answer(row.requester, sender)

    def _resolution(self, row: InterruptRow, choice: str) -> Resolution:
        if row.kind != "tool_confirm":
            label = str(next((label for label, value in row.choices if value == choice), choice))
            if row.kind == "plan_approval":
                return PlanDecision(choice=choice, answer=label)
            return Answer(choice=choice, text=label)
        ids = tuple(str(c["id"]) for c in row.payload.get("calls", []))
        if choice in ("a", "g"):
            return ToolDecision(approved=ids, grant=choice == "g", choice=choice)
        if choice.startswith("o") and choice[1:].isdigit() and 1 <= int(choice[1:]) <= len(ids):
            return ToolDecision(approved=(ids[int(choice[1:]) - 1],), choice=choice)
        return ToolDecision(choice=choice)

    # -- text -----------------------------------------------------------------------------

    async def on_text(self, row: InterruptRow, event: InboundMessage, event_key: str | None = None) -> TextOutcome:
        """A text message while ``row`` is pending (commands never get here).

        ``event_key``: the message's inbox key, marked handled in the same write as the
        resolution it makes (or with the reminder); left alone when the text is not consumed.
        """
        if not self._may_answer(row, event.sender):
            return TextOutcome(False)
        if row.kind == "ask_user":
            await self.resolve(row, Answer(text=event.text), event.sender, event_key=event_key)
            return TextOutcome(True)
        decision = yes_no(event.text)
        if decision and row.kind == "tool_confirm" and not any(value == "a" for _label, value in row.choices):
            if event_key is None or await self._first_time(event_key, event.chat):
                await self._notice(event.chat, "Press 📄 Show all first: approve once you have seen all of it.")
            return TextOutcome(True)
        if decision is not None:
            resolution: Resolution
            if row.kind == "tool_confirm":
                ids = tuple(str(c["id"]) for c in row.payload.get("calls", []))
                resolution = ToolDecision(approved=ids if decision else (), choice="a" if decision else "d")
            else:
                resolution = PlanDecision(choice="approve" if decision else "reject", answer=event.text)
            await self.resolve(row, resolution, event.sender, event_key=event_key)
            return TextOutcome(True)
        if row.kind == "plan_approval":
            # Anything else is feedback on the plan.
            await self.resolve(row, PlanDecision(choice="edit", feedback=event.text), event.sender, event_key=event_key)
            return TextOutcome(True)
        if row.reprompted == 0:
            if event_key is not None and not await self._first_time(event_key, event.chat):
                return TextOutcome(True)
            await self.runs.mark_reprompted(row)
            await self._notice(
                row.chat,
                "I'm waiting for your decision on the request above: press a button or reply yes / no. "
                "If you send something else again, I'll drop that request and take the new one.",
            )
            return TextOutcome(True)
        await self.end(row, "superseded", DENIED_SUPERSEDED, "↪️ Dropped: you moved on to a new request.")
        return TextOutcome(False)

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

    # -- expiry ---------------------------------------------------------------------------

    def start(self) -> None:
        """Expire interrupts as their timers fire (each expiry in a task of its own)."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(), name="interrupt-expiry")

    async def _watch(self) -> None:
        while True:
            interrupt_id = await self.timers.next_due()
            task = asyncio.create_task(self.expire(interrupt_id), name=f"expire-{interrupt_id}")
            self._expiring.add(task)
            task.add_done_callback(self._expiring.discard)

    async def drain(self) -> None:
        """Stop the timers and let expiries already running finish."""
        self.timers.stop()
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
            self._watcher = None
        if self._expiring:
            await asyncio.gather(*list(self._expiring), return_exceptions=True)

    async def expire(self, interrupt_id: str) -> None:
        row = await self.runs.get_interrupt(interrupt_id)
        if row is None or row.status != "pending":
            return
        text = "⌛ Expired: not confirmed in time, nothing was run." if row.kind == "tool_confirm" else "⌛ Expired."
        with fenced(self.fences.fence_for(row.chat_key)):
            try:
                await self.end(row, "expired", DENIED_EXPIRED, text)
            except LeaseLost:
                log.info("interrupt %s of %s: its partition moved; its new owner expires it", row.id, row.chat_key)

    async def reconcile(self, now: datetime | None = None, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Schedule every pending interrupt (of the chats ``owns`` selects); expire those whose time passed
        while nobody watched them.  Expiring is a conditional update: once, whoever else has a timer."""
        now = now or self.timers.clock.utcnow()
        expired = []
        for row in await self.runs.all_pending():
            if owns is not None and not owns(row.chat_key):
                continue
            if row.expires_at is not None and row.expires_at <= now:
                await self.expire(row.id)
                expired.append(row.id)
            else:
                self.timers.schedule(row.id, row.expires_at)
        return expired

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
