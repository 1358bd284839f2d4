"""The Supervisor: decides what happens to each inbound event.

For each event, in the chat's place on the bus (one event per chat at a time):
1. resolve the sender (access and admin rights come from configuration, never
   from the platform) and drop duplicates;
2. commands (they never reach an agent and never resolve an interrupt);
3. a pending interrupt: the button or text resolves it and the run resumes;
4. otherwise route (``@name``, ``@auto --strategy=…``, the chat's strategy,
   the fallback) and start a run.
Every accepted message is stored before anything is answered.

When the database cannot take the write that marks an event handled (a full disk, a lock), the event is not
dropped: the same write is tried again with backoff (:data:`RETRY_FIRST_S` doubling up to :data:`RETRY_CAP_S`)
while the chat keeps its place (its later events wait behind it, in order), and the person is told once that the
answer is delayed.  The inbox row's handled guard makes the event count once, however many attempts it took.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.messages import Media, Message
from bot.clock import SYSTEM_CLOCK, Clock
from bot.commands.registry import CommandCall, CommandRegistry, parse_command
from bot.config.settings import ChannelSection, Settings
from bot.delivery import Delivery
from bot.events import (
    Action,
    ChatKey,
    ConsoleInput,
    InboundEvent,
    InboundMessage,
    OutboundMessage,
    Sender,
    event_key,
)
from bot.fencing import LeaseLost
from bot.ids import fast_id
from bot.interrupts.service import InterruptService, TextOutcome
from bot.media.intake import MediaIntake
from bot.pairing import Pairing
from bot.routing import parse_target, routing_notice
from bot.routing.policy import RoutePolicy
from bot.runs.catalog import AgentCatalog, AgentDef
from bot.runs.manager import RunManager
from bot.store.base import StoreError
from bot.store.ops import Step
from bot.store.retry import DELAYED
from bot.store.runs import RunRow, RunStore
from bot.store.sql import SqlStore
from bot.store.writer import StoreUnavailable
from bot.tracing.context import correlated
from bot.tracing.recorder import Tracing

log = logging.getLogger(__name__)

CRASHED = "⚠️ Something went wrong while answering; the error was logged and the request was stopped."
NOT_SAVED = "⚠️ I could not save your message, so I did not act on it."

RETRY_FIRST_S = 0.25
"""The first wait before trying a refused write again; each next wait doubles ..."""
RETRY_CAP_S = 5.0
"""... up to this: once the database answers again, a waiting chat goes on within about this long."""
RETRY_FOR_S = 3600.0
"""How long a write the database cannot take *now* (:class:`StoreUnavailable`) is tried again.  Past it, the event
stays stored and pending (the next start takes it up) and the chat's queue moves on."""
RETRY_ATTEMPTS = 3
"""Attempts at a write refused for any other reason (it may have failed only because it shared its batch with a
bad write; a write that is bad itself must not hold its chat for long)."""
_KEEP = 10_000
"""Chats whose last "delayed" notice is remembered."""


@dataclass
class Supervisor:
    settings: Settings
    store: SqlStore
    delivery: Delivery
    catalog: AgentCatalog
    manager: RunManager
    interrupts: InterruptService
    runs: RunStore
    routes: RoutePolicy
    commands: CommandRegistry
    tracing: Tracing | None = None
    media: MediaIntake | None = None
    clock: Clock = SYSTEM_CLOCK
    """Waits between attempts at a refused write, and the spacing of "delayed" notices."""
    pairing: Pairing | None = None
    """Senders an admin let in with ``/pair`` (allowed like ``allow_from``)."""
    _busy: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    _stopping: set[str] = field(default_factory=set)
    _delayed: OrderedDict[str, float] = field(default_factory=OrderedDict)
    """When each chat was last told that its answer is delayed (monotonic clock)."""
    _notices: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def agents(self) -> dict[str, AgentDef]:
        return self.catalog.agents

    # -- access -------------------------------------------------------------------------

    def channel_config(self, chat: ChatKey) -> ChannelSection | None:
        return getattr(self.settings.channels, chat.channel, None)

    def resolve_sender(self, chat: ChatKey, sender: Sender) -> tuple[Sender, bool]:
        """The sender with ``is_admin`` from configuration, and whether they are allowed."""
        config = self.channel_config(chat)
        if config is None:
            return sender.model_copy(update={"is_admin": False}), False
        is_admin = config.is_admin(sender.id)
        if sender.is_admin != is_admin:  # admin rights come from configuration, never from the platform
            sender = sender.model_copy(update={"is_admin": is_admin})
        return sender, config.allows(sender.id) or is_admin

    async def admit_sender(self, chat: ChatKey, sender: Sender) -> tuple[Sender, bool]:
        """:meth:`resolve_sender`, and a sender the configuration does not allow asked of the pairing."""
        sender, allowed = self.resolve_sender(chat, sender)
        if not allowed and self.pairing is not None and self.channel_config(chat) is not None:
            allowed = await self.pairing.allows(chat.channel, sender.id)
        return sender, allowed

    async def check_press(self, action: Action) -> str | None:
        """For adapters, before they publish a press: why it would be refused (a toast), or None."""
        sender, allowed = await self.admit_sender(action.chat, action.sender)
        if not allowed:
            return f"You are not allowed to use this bot (your id: {action.sender.id})."
        return await self.interrupts.check_press(action.model_copy(update={"sender": sender}))

    # -- entry points -----------------------------------------------------------------------

    def is_urgent(self, event: InboundEvent) -> bool:
        """``/cancel`` (or ``/stop``) is handled at once, outside the chat's queue, so it can stop a busy run."""
        if not isinstance(event, InboundMessage):
            return False
        parsed = parse_command(event.text, self._bot_names())
        return parsed is not None and parsed[0] in ("cancel", "stop") and str(event.chat) in self._busy

    async def handle(self, event: InboundEvent) -> None:
        with correlated(event_key(event)):
            await self._handle(event)

    def console_sender(self, console: ConsoleInput) -> Sender | None:
        """The web console's signed-in admin as a sender (None: no longer an admin there)."""
        web = self.settings.web
        if not (web.enabled and web.role_of(console.user) == "admin"):
            return None
        return Sender(id=f"web:{console.user}", name=f"{console.user} (web)", is_admin=True)

    async def _handle(self, event: InboundEvent) -> None:
        if isinstance(event, Action) and event.console is not None:
            web_sender = self.console_sender(event.console)
            sender, allowed = (web_sender, True) if web_sender is not None else (event.sender, False)
        else:
            sender, allowed = await self.admit_sender(event.chat, event.sender)
        if sender is not event.sender:
            event = event.model_copy(update={"sender": sender})
        key = event_key(event)
        if isinstance(event, Action):
            if allowed:
                # De-duplicated inside: marked handled in the same write as the resolution it makes.
                # Tracked like a new request: the run it resumes can be stopped, and a crash ends it.
                await self._run_tracked(event, self.interrupts.on_action(event, key))
            else:
                await self._accept(event, key, None)
            return
        if sender.is_bot or not allowed:
            # The inbox refused these at the door; here only after a configuration change (recovery).
            await self._accept(event, key, None)
            return
        if not event.text.strip() and not event.attachments:
            await self._accept(event, key, None)
            return
        chat_key = str(event.chat)
        pending = await self.runs.pending(chat_key)
        addressed = event.is_direct or event.mentions_bot or not self._mention_required(event.chat)
        if not addressed and not (pending is not None and pending.requester == sender.id):
            await self._accept(event, key, None)
            return
        parsed = parse_command(event.text, self._bot_names())
        if parsed is not None:
            if await self._accept(event, key, None):
                reply = await self.commands.dispatch(CommandCall(parsed[0], parsed[1], event))
                if reply:  # a command that answered by itself returns nothing more to say
                    await self.send(OutboundMessage(chat=event.chat, text=reply, reply_to=event.id))
            return
        media: tuple[Media, ...] = ()
        if self.media is not None and self.media.wanted(event):
            prepared = await self.media.prepare(event)
            if prepared.refused:
                await self.send(
                    OutboundMessage(chat=event.chat, text=self.media.refusal(prepared.refused), reply_to=event.id)
                )
            if not prepared.text and not prepared.media:
                await self._accept(event, key, None)
                return
            event, media = event.model_copy(update={"text": prepared.text}), prepared.media
        elif not event.text.strip():
            # Files not taken (media off) or not files (a location): the agents see what arrived.
            kinds = ", ".join(sorted({a.kind for a in event.attachments}))
            refs = " ".join(f"{a.kind}: {a.ref}" for a in event.attachments if a.kind == "location" and a.ref)
            event = event.model_copy(update={"text": f"(sent {kinds} without text{'; ' + refs if refs else ''})"})
        if pending is not None:
            if pending.requester != sender.id and not sender.is_admin:
                if await self._accept(event, key, None):
                    await self.notice(
                        event.chat, "A request in this chat is waiting for an answer; please wait or /cancel."
                    )
                return
            outcome: list[TextOutcome] = []

            async def answer() -> None:
                outcome.append(await self.interrupts.on_text(pending, event, key))

            await self._run_tracked(event, answer())
            if not outcome or outcome[0].handled:
                return
        await self._run_tracked(event, self._route_and_run(event, key, media))

    async def handle_urgent(self, event: InboundEvent) -> None:
        """``/cancel`` or ``/stop`` while a run is busy: stop it now."""
        assert isinstance(event, InboundMessage)
        sender, allowed = await self.admit_sender(event.chat, event.sender)
        if not allowed or not await self._accept(event, event_key(event), None):
            return
        key = str(event.chat)
        task = self._busy.get(key)
        if task is not None:
            self._stopping.add(key)
            task.cancel()
            await self.notice(event.chat, "🚫 Stopped the running request.")
        else:
            cancelled = await self.interrupts.cancel(event.chat, sender)
            await self.notice(event.chat, "Cancelled." if cancelled else "Nothing to cancel.")

    async def _run_tracked(self, event: InboundEvent, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the chat's own task, which ``/cancel`` may cancel while it runs.

        No task of its own: the chat's bus worker runs it.  A cancellation that
        ``/cancel`` asked for (``_stopping``) ends here; any other (shutdown) goes on.
        """
        key = str(event.chat)
        task = asyncio.current_task()
        assert task is not None
        self._busy[key] = task
        try:
            await work
        except asyncio.CancelledError:
            if key not in self._stopping:
                raise
            task.uncancel()
            self._busy.pop(key, None)  # nothing left to stop: what follows must not be cut short by another /cancel
            await self._accept(event, event_key(event), None)  # cancelled before its run began: handled
            await self._end_running(key, "cancelled")
        except Exception:
            log.exception("chat %s: run crashed", key)
            self._busy.pop(key, None)
            # Handled, whatever happened: a message that crashes its handling must not crash every restart,
            # and its run ends as failed (never left "running" for ever).
            await self._accept(event, event_key(event), None)
            if not await self._end_running(key, "failed", CRASHED):
                await self.notice(event.chat, CRASHED)
        finally:
            self._busy.pop(key, None)
            self._stopping.discard(key)

    async def _end_running(self, chat_key: str, status: str, notice: str | None = None) -> bool:
        """End the chat's running run(s) with ``status`` (and ``notice``); whether there was one."""
        ended = False
        for run in await self.runs.runs_with_status("running"):
            if run.chat_key == chat_key:
                reply = OutboundMessage(chat=ChatKey.parse(chat_key), text=notice, kind="notice") if notice else None
                await self.manager.finish(run, status, [], reply)
                ended = True
        return ended

    # -- routing ------------------------------------------------------------------------------

    async def _route_and_run(self, event: InboundMessage, key: str, media: tuple[Media, ...] = ()) -> None:
        """Route, then in ONE write: mark the event handled, store the message, record the run; then run it.

        Routing has no side effects, so a crash before that write leaves the event pending and
        recovery routes it again; after it, the run is recovered like any other.
        """
        config = await self.routes.effective_routing()
        said = Message.user(event.text, media)
        problem = parse_target(event.text, self.catalog.agents).error
        if problem is not None:  # a typo in @agent or --strategy: say so instead of guessing
            if await self._accept(event, key, said):
                await self.send(OutboundMessage(chat=event.chat, text=problem, reply_to=event.id))
            return
        decision = await self.routes.decide(event.chat, event.text, config)
        if decision.note and decision.method == "fallback":
            log.info("chat %s: routing fell back: %s", event.chat, decision.note)
        agent = self.agents.get(decision.agent) if decision.agent else None
        kinds: set[str] = {m.kind for m in media}
        if agent is not None and not agent.takes(kinds):
            taker = self._taker(kinds, config.default_agent)
            if taker is None:
                if await self._accept(event, key, said):
                    text = f"{agent.name} does not take {' or '.join(sorted(kinds))} files, and no agent here does."
                    await self.send(OutboundMessage(chat=event.chat, text=text, reply_to=event.id))
                return
            decision.note = f"{agent.name} does not take {', '.join(sorted(kinds))}; {taker.name} does"
            agent = taker
        if agent is None:
            if await self._accept(event, key, said) and decision.fallback == "prompt_user":
                listing = self.routes.router.agent_list()
                await self.send(OutboundMessage(chat=event.chat, text=listing, reply_to=event.id))
            return
        run = RunRow(
            id=fast_id(),
            chat_key=str(event.chat),
            agent=agent.name,
            status="running",
            correlation_id=key,
            user_id=event.sender.id,
            reply_to=event.id,
            direct=event.is_direct,
        )
        start = self.runs.start_run_step(run, after_message=True)
        if not await self._accept(event, key, said, extra=[start]):
            return
        run.history_cutoff = (await self.store.chat_state(run.chat_key)).last_id
        file_agent = agent.spec is not None and agent.spec.scope != "builtin"
        line = routing_notice(decision, config.notify, agent=agent.name, file_agent=file_agent)
        if line is not None:
            await self.notice(event.chat, line)
        if self.tracing is not None:
            self.tracing.record(
                "route",
                run.chat_key,
                key,
                agent=agent.name,
                method=decision.method,
                strategy=decision.strategy,
                confidence=decision.confidence,
                keywords=decision.matched_keywords or None,
                patterns=decision.matched_patterns or None,
                latency_us=round(decision.latency_us, 1),
                note=decision.note or None,
            )
        await self.manager.start(run, agent, Message.user(decision.text or event.text, media), recorded=True)

    # -- helpers ------------------------------------------------------------------------------

    def _taker(self, kinds: set[str], default: str) -> AgentDef | None:
        """The agent for a message whose files the routed one does not take: the default agent if it takes
        them, else the first that does."""
        first = self.agents.get(default)
        if first is not None and first.takes(kinds):
            return first
        return next((a for a in self.agents.values() if a.takes(kinds)), None)

    def _bot_names(self) -> frozenset[str]:
        return frozenset({self.settings.bot.name.lower()})

    def _mention_required(self, chat: ChatKey) -> bool:
        config = self.channel_config(chat)
        return config is not None and config.mention_policy == "mention"

    async def _accept(
        self, event: InboundEvent, key: str, message: Message | None, *, extra: Sequence[Step] = ()
    ) -> bool:
        """Mark ``event`` handled (with ``message`` and ``extra`` in the same write); False: handled before.

        A write the database refuses is tried again (see the module docstring) in the chat's place; False only
        when it gave up (the event stays pending, and the person was told).
        """
        delay, waited, attempt = RETRY_FIRST_S, 0.0, 0
        while True:
            attempt += 1
            try:
                accepted = await self.store.accept(key, str(event.chat), message, extra=extra)
            except StoreError as exc:
                unavailable = isinstance(exc, StoreUnavailable)
                if (waited >= RETRY_FOR_S) if unavailable else (attempt >= RETRY_ATTEMPTS):
                    log.error("chat %s: gave up saving event %s after %d attempts: %s", event.chat, key, attempt, exc)
                    kept = " It is kept: I will take it up after my next restart." if unavailable else " Please resend."
                    await self.notice(event.chat, NOT_SAVED + kept)
                    return False
                if attempt == 1:
                    log.warning("chat %s: could not save event %s (trying again): %s", event.chat, key, exc)
                    self._tell_delayed(event.chat)
                await self.clock.sleep(delay)
                waited += delay
                delay = min(RETRY_CAP_S, delay * 2)
                continue
            if attempt > 1:
                log.info("chat %s: saved event %s at attempt %d, %.1f s late", event.chat, key, attempt, waited)
            return accepted

    def _tell_delayed(self, chat: ChatKey) -> None:
        """Say that the answer is delayed, at most once per chat per ``limits.notice_interval_s``; off the chat's
        path (a notice that cannot go out holds nothing up)."""
        key, now = str(chat), self.clock.monotonic()
        told = self._delayed.get(key)
        if told is not None and now - told < self.settings.limits.notice_interval_s:
            return
        self._delayed[key] = now
        self._delayed.move_to_end(key)
        while len(self._delayed) > _KEEP:
            self._delayed.popitem(last=False)
        task = asyncio.ensure_future(self._notice_quietly(chat, DELAYED))
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    async def _notice_quietly(self, chat: ChatKey, text: str) -> None:
        try:
            await self.notice(chat, text)
        except (Exception, LeaseLost) as exc:
            log.warning("chat %s: could not send a notice: %s", chat, exc)

    async def send(self, message: OutboundMessage) -> str | None:
        return await self.delivery.send(message)

    async def notice(self, chat: ChatKey, text: str) -> None:
        await self.send(OutboundMessage(chat=chat, text=text, kind="notice"))
