"""The inbound pipeline's stages, one job each, each holding exactly what it uses.

See :mod:`bot.gateway.pipeline` for how a stage passes a turn on or ends it, and
:func:`bot.gateway.handling.build_pipeline` for the one list that orders them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

from agents.messages import Message
from bot.access import AccessPolicy
from bot.commands.registry import CommandCall, CommandRegistry, parse_command
from bot.config.settings import ChannelsSection
from bot.events import Action, InboundMessage, OutboundMessage
from bot.gateway.pipeline import Answered, Arrival, Desk, Handled, Ignored, Outcome
from bot.ids import fast_id
from bot.interrupts.service import InterruptService
from bot.media.intake import MediaIntake
from bot.routing import parse_target, routing_notice
from bot.routing.policy import RoutePolicy
from bot.runs.catalog import AgentCatalog, AgentDef
from bot.runs.manager import RunManager
from bot.store.ports import ChatReads, Runs
from bot.store.rows import RunRow
from bot.tracing.recorder import Tracing

log = logging.getLogger(__name__)

WAIT_FOR_PENDING = "A request in this chat is waiting for an answer; please wait or /cancel."


@dataclass
class Identify:
    """Who sent it: admin rights from configuration, a console press as its signed-in admin."""

    access: AccessPolicy
    name: ClassVar[str] = "identify"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        admission = await self.access.admit(turn.event)
        turn.sender, turn.allowed = admission.sender, admission.allowed
        if turn.sender is not turn.event.sender:
            turn.event = turn.event.model_copy(update={"sender": turn.sender})
        return None


@dataclass
class Access:
    """Only allowed people (never bots) get further; the intake refused the others at the door, so they reach
    here only after a configuration change (recovery)."""

    name: ClassVar[str] = "access"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        if not turn.allowed:
            return Ignored("not allowed")
        if turn.sender.is_bot and isinstance(turn.event, InboundMessage):
            return Ignored("a bot")
        return None


@dataclass
class Addressed:
    """Messages with something in them, meant for the bot: addressed to it, or from the person a pending request
    waits for."""

    runs: Runs
    channels: ChannelsSection
    """Whose messages must mention the bot (each channel's ``mention_policy``)."""
    name: ClassVar[str] = "addressed"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        if isinstance(event, Action):
            return None
        if not event.text.strip() and not event.attachments:
            return Ignored("empty")
        turn.pending = pending = await self.runs.pending(turn.chat_key)
        if event.is_direct or event.mentions_bot or not self._mention_required(turn):
            return None
        if pending is not None and pending.requester == turn.sender.id:
            return None
        return Ignored("not addressed")

    def _mention_required(self, turn: Arrival) -> bool:
        config = getattr(self.channels, turn.chat.channel, None)
        return config is not None and config.mention_policy == "mention"


@dataclass
class Command:
    """``/name args``: marked handled, then the command runs (it never reaches an agent or answers a request)."""

    commands: CommandRegistry
    bot_names: frozenset[str]
    name: ClassVar[str] = "command"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        if isinstance(event, Action):
            return None
        parsed = parse_command(event.text, self.bot_names)
        if parsed is None:
            return None
        call = CommandCall(parsed[0], parsed[1], event)
        return Answered("command", then=lambda: self.commands.dispatch(call))


@dataclass
class Media:
    """Files read into what the agents take (a voice note's words, an image); what arrived said otherwise."""

    media: MediaIntake | None
    desk: Desk
    name: ClassVar[str] = "media"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        if isinstance(event, Action):
            return None
        if self.media is not None and self.media.wanted(event):
            prepared = await self.media.prepare(event)
            if prepared.refused:
                text = self.media.refusal(prepared.refused)
                await self.desk.send(OutboundMessage(chat=turn.chat, text=text, reply_to=event.id))
            if not prepared.text and not prepared.media:
                return Ignored("no media taken")
            turn.event, turn.media = event.model_copy(update={"text": prepared.text}), prepared.media
        elif not event.text.strip():
            # Files not taken (media off) or not files (a location): the agents see what arrived.
            kinds = ", ".join(sorted({a.kind for a in event.attachments}))
            refs = " ".join(f"{a.kind}: {a.ref}" for a in event.attachments if a.kind == "location" and a.ref)
            turn.event = event.model_copy(update={"text": f"(sent {kinds} without text{'; ' + refs if refs else ''})"})
        return None


@dataclass
class Pending:
    """A press answers the chat's pending request (or is refused); so does a text from the person asked."""

    interrupts: InterruptService
    name: ClassVar[str] = "pending"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        if isinstance(event, Action):
            # De-duplicated inside: marked handled in the same write as the resolution it makes.
            await self.interrupts.on_action(event, turn.key)
            return Handled("press")
        pending = turn.pending
        if pending is None:
            return None
        if not AccessPolicy.may_answer(pending.requester, turn.sender):
            return Answered("someone else's request is pending", WAIT_FOR_PENDING, notice=True)
        if (await self.interrupts.on_text(pending, event, turn.key)).handled:
            return Handled("answer")
        return None


@dataclass
class Route:
    """Which agent answers: ``@name``, ``@auto --strategy=…``, the chat's strategy, then the fallback (no side
    effects: a crash before ``run`` leaves the event pending, and recovery routes it again)."""

    routes: RoutePolicy
    catalog: AgentCatalog
    name: ClassVar[str] = "route"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        assert isinstance(event, InboundMessage)
        config = turn.routing = await self.routes.effective_routing()
        said = turn.said = Message.user(event.text, turn.media)
        problem = parse_target(event.text, self.catalog.agents).error
        if problem is not None:  # a typo in @agent or --strategy: say so instead of guessing
            return Answered("target", problem, stored=said)
        decision = turn.decision = await self.routes.decide(turn.chat, event.text, config)
        if decision.note and decision.method == "fallback":
            log.info("chat %s: routing fell back: %s", turn.chat, decision.note)
        agent = self.catalog.agents.get(decision.agent) if decision.agent else None
        kinds: set[str] = {m.kind for m in turn.media}
        if agent is not None and not agent.takes(kinds):
            taker = self._taker(kinds, config.default_agent)
            if taker is None:
                text = f"{agent.name} does not take {' or '.join(sorted(kinds))} files, and no agent here does."
                return Answered("no agent takes the files", text, stored=said)
            decision.note = f"{agent.name} does not take {', '.join(sorted(kinds))}; {taker.name} does"
            agent = taker
        if agent is None:
            listing = self.routes.router.agent_list() if decision.fallback == "prompt_user" else None
            return Answered("no agent", listing, stored=said)
        turn.agent = agent
        return None

    def _taker(self, kinds: set[str], default: str) -> AgentDef | None:
        """The agent for a message whose files the routed one does not take: the default agent if it takes
        them, else the first that does."""
        agents = self.catalog.agents
        first = agents.get(default)
        if first is not None and first.takes(kinds):
            return first
        return next((a for a in agents.values() if a.takes(kinds)), None)


@dataclass
class Run:
    """In ONE write: the event marked handled, the message stored, the run recorded; then the run goes."""

    runs: Runs
    store: ChatReads
    manager: RunManager
    tracing: Tracing | None
    desk: Desk
    name: ClassVar[str] = "run"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event, agent, decision, config = turn.event, turn.agent, turn.decision, turn.routing
        assert isinstance(event, InboundMessage) and agent is not None and decision is not None and config
        run = RunRow(
            id=fast_id(),
            chat_key=turn.chat_key,
            agent=agent.name,
            status="running",
            correlation_id=turn.key,
            user_id=turn.sender.id,
            reply_to=event.id,
            direct=event.is_direct,
        )
        start = self.runs.start_run_step(run, after_message=True)
        if not await self.desk.mark(turn, turn.said, extra=[start]):
            return Handled("handled before")
        run.history_cutoff = (await self.store.chat_state(run.chat_key)).last_id
        file_agent = agent.spec is not None and agent.spec.scope != "builtin"
        line = routing_notice(decision, config.notify, agent=agent.name, file_agent=file_agent)
        if line is not None:
            await self.desk.notice(turn.chat, line)
        if self.tracing is not None:
            self.tracing.record(
                "route",
                run.chat_key,
                turn.key,
                agent=agent.name,
                method=decision.method,
                strategy=decision.strategy,
                confidence=decision.confidence,
                keywords=decision.matched_keywords or None,
                patterns=decision.matched_patterns or None,
                latency_us=round(decision.latency_us, 1),
                note=decision.note or None,
                model_call=decision.model_call,
                routed=decision.text[:2000] if decision.method != "explicit" else None,  # what a re-route corrects
            )
        text = decision.text or event.text
        said = turn.said  # frozen: the stored message is the run's, unless ``@agent`` was cut off its text
        message = said if said is not None and said.text == text else Message.user(text, turn.media)
        await self.manager.start(run, agent, message, recorded=True)
        return Handled("run")
