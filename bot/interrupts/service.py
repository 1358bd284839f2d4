"""Interrupts: reading a button press or a text reply into a resolution; showing a prompt (again, or whole).

A press is checked (the interrupt still pending, the nonce right, the sender allowed) before the adapter answers
the platform and again in the chat's turn, where it is authoritative.  Resolving, exactly once, and ending an
interrupt are :mod:`bot.interrupts.resolving`; expiry (timers reconciled from the table at start-up, so what
expired while the gateway was down expires then) is :mod:`bot.interrupts.expiry`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from agents.resolutions import Answer, PlanDecision, Resolution, ToolDecision
from bot.access import AccessPolicy
from bot.delivery import Delivery
from bot.events import Action, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.fencing import NO_FENCES, Fences
from bot.interrupts.console import console_refusal, console_resolution
from bot.interrupts.expiry import DENIED_EXPIRED as DENIED_EXPIRED
from bot.interrupts.expiry import Expiries, ExpiryTimers
from bot.interrupts.resolving import DENIED_SUPERSEDED, NOT_PENDING, NOT_SAVED, PausedRuns, Resolver
from bot.interrupts.text import SHOW_ALL, buttons_for, parse_payload, yes_no
from bot.store.base import EventNotStored, StoreError
from bot.store.ports import Runs
from bot.store.retry import until_stored
from bot.store.rows import InterruptRow

log = logging.getLogger(__name__)

NOT_YOURS = "Only the person who was asked (or an admin) can answer this."
GRANT_IS_ADMINS = (
    "In a group only an admin can always allow a tool (it would skip confirmations for everyone); Approve runs it once."
)


@dataclass
class TextOutcome:
    """What a text reply did to a pending interrupt."""

    handled: bool
    """True: the text was consumed (an answer, a re-prompt); False: treat it as a new request."""


class InterruptService(Resolver):
    """Everything that ends a pending interrupt: presses and replies read into a resolution (here), resolving and
    ending (:class:`~bot.interrupts.resolving.Resolver`), expiry (:class:`~bot.interrupts.expiry.Expiries`)."""

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
        super().__init__(runs, manager, delivery, timers, handled)
        self.fences = fences
        self.expiries = Expiries(timers, runs, self.end, fences)

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
        recorded with the resolution in one write, or alone when the press is refused.

        Exactly once across a crash: a press handled at once reaches here before its inbox row commits, and the
        resolution's write (the press marked handled, the interrupt resolved on ``status = 'pending'``, the run
        running) carries that row, so the two commit together or not at all (:mod:`bot.store.sql.writer`, held
        inserts); the platform hears "received" only after that commit.  Killed before it: nothing of the press
        is stored and nothing ran (a tool runs only after the commit); the platform delivers it again and it
        resolves then.  Killed after it: the restart resumes the running run from its checkpoint (the tool ledger
        keeps a tool from running twice), and a redelivery finds its row handled, so it changes and says
        nothing.  A row that went alone (its handler came later) stays pending until this write marks it, and a
        restart hands it on again; the conditional update still lets one resolution through
        (tests/bot/test_press_crash.py kills a gateway at both points)."""
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

    # -- expiry ---------------------------------------------------------------------------

    def start(self) -> None:
        """Expire interrupts as their timers fire (:meth:`Expiries.start`)."""
        self.expiries.start()

    async def drain(self) -> None:
        """Stop the timers and let expiries already running finish."""
        await self.expiries.drain()

    async def expire(self, interrupt_id: str) -> None:
        await self.expiries.expire(interrupt_id)

    async def reconcile(self, now: datetime | None = None, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Schedule every pending interrupt (of the chats ``owns`` selects); expire those whose time passed while
        nobody watched them (:meth:`Expiries.reconcile`)."""
        return await self.expiries.reconcile(now, owns)
