"""The inbound pipeline: an ordered list of named stages, each with one job, that every event goes through.

Like aiogram's middlewares, but a list you read in one place (:func:`bot.gateway.handling.build_pipeline` builds
it, each stage with exactly what it uses).  A stage looks at the :class:`Arrival` (the event and what the stages
before it learned) and either passes it on (returns None) or ends it with an :data:`Outcome`, which says how
the event is marked handled, the one way for each kind:

- :class:`Ignored`: marked handled, nothing stored, nothing said (a stranger, an empty or unaddressed message);
- :class:`Answered`: marked handled (with the person's message when it is kept), then a reply or notice;
- :class:`Handled`: the stage's own work marked it, in the same write as what it did (a resolution, a run).

:class:`AsRequest` is a wrapping stage: the stages inside it run as the chat's request (``/cancel`` may stop them,
and a crash there ends the event as handled and the chat's running run as failed: the desk's :meth:`Desk.tracked`),
and the outcome one of them ends the event with is settled there too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from agents.messages import Media, Message
from bot.config.settings import RoutingSection
from bot.events import ChatKey, InboundEvent, OutboundMessage, Sender, event_key
from bot.routing import RouteDecision
from bot.runs.catalog import AgentDef
from bot.store.rows import InterruptRow
from bot.store.values import Change


@dataclass(slots=True)
class Arrival:
    """One inbound event on its way through the stages, and what they learned of it."""

    event: InboundEvent
    key: str
    """The event's de-duplication key (``channel:platform id``); the run's correlation id."""
    chat: ChatKey
    chat_key: str
    """``str(chat)``, made once: the form the store keys rows by."""
    sender: Sender
    allowed: bool = False
    pending: InterruptRow | None = None
    """The chat's pending request (read by ``addressed``, answered by ``pending``)."""
    media: tuple[Media, ...] = ()
    said: Message | None = None
    """The person's message as the history keeps it (set by ``route``)."""
    routing: RoutingSection | None = None
    decision: RouteDecision | None = None
    agent: AgentDef | None = None

    @classmethod
    def of(cls, event: InboundEvent) -> Arrival:
        return cls(event, event_key(event), event.chat, str(event.chat), event.sender)


@dataclass(frozen=True, slots=True)
class Ignored:
    """Marked handled; nothing stored, nothing said."""

    why: str


@dataclass(frozen=True, slots=True)
class Answered:
    """Marked handled (with ``stored`` in the history), then ``text`` (or what ``then`` returns) is said."""

    why: str
    text: str | None = None
    stored: Message | None = None
    notice: bool = False
    """A notice in the chat rather than a reply to the message."""
    then: Callable[[], Awaitable[str | None]] | None = None
    """Work done only once the event is marked handled (a command); what it returns is said."""


@dataclass(frozen=True, slots=True)
class Handled:
    """The stage's work marked the event handled itself."""

    why: str


Outcome = Ignored | Answered | Handled


class Stage(Protocol):
    """One step of the pipeline: returns None to pass the turn on, or the turn's outcome."""

    name: ClassVar[str]

    async def __call__(self, turn: Arrival) -> Outcome | None: ...


class Desk(Protocol):
    """What the pipeline and its stages do to an event besides deciding: mark it, speak, track its request."""

    async def mark(self, turn: Arrival, message: Message | None = None, *, extra: Sequence[Change] = ()) -> bool:
        """Mark the event handled (with ``message`` and ``extra`` in the same write); False: handled before."""

    async def send(self, message: OutboundMessage) -> str | None: ...

    async def notice(self, chat: ChatKey, text: str) -> None: ...

    async def tracked(self, turn: Arrival, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as the chat's request (``/cancel`` stops it; a crash is reported and ends it)."""


@dataclass
class Settle:
    """Marks an event handled the one way its outcome's kind says, and counts the outcomes by stage."""

    desk: Desk
    counts: dict[str, int] = field(default_factory=dict)
    """How many events each stage ended, by ``stage:kind`` (for tests and debugging)."""

    async def __call__(self, turn: Arrival, stage: str, outcome: Outcome) -> None:
        tally = f"{stage}:{type(outcome).__name__.lower()}"
        self.counts[tally] = self.counts.get(tally, 0) + 1
        if isinstance(outcome, Handled):
            return
        desk = self.desk
        if isinstance(outcome, Ignored):
            await desk.mark(turn)
            return
        if not await desk.mark(turn, outcome.stored):
            return
        text = outcome.text
        if outcome.then is not None:
            text = await outcome.then()
        if not text:
            return
        if outcome.notice:
            await desk.notice(turn.chat, text)
        else:
            await desk.send(OutboundMessage(chat=turn.chat, text=text, reply_to=turn.event.id))


SETTLED = Handled("settled inside a wrapping stage")
"""What a wrapping stage returns once one of its stages ended the event (already settled, so counted once)."""


@dataclass
class AsRequest:
    """A wrapping stage: ``stages`` run as the chat's request (:meth:`Desk.tracked`: ``/cancel`` may stop them, a
    crash ends the event as handled and the chat's running run as failed), and the outcome one of them ends the
    event with is settled there, counted under that stage's name."""

    stages: Sequence[Stage]
    settle: Settle
    name: ClassVar[str] = "request"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        await self.settle.desk.tracked(turn, self._through(turn))
        return SETTLED

    async def _through(self, turn: Arrival) -> None:
        for stage in self.stages:
            outcome = await stage(turn)
            if outcome is not None:
                await self.settle(turn, stage.name, outcome)
                return


@dataclass
class Pipeline:
    """Runs each event through ``stages`` until one ends it, then settles the outcome (:class:`Settle`)."""

    stages: Sequence[Stage]
    settle: Settle

    @property
    def names(self) -> list[str]:
        """The stages' names in the order events meet them (a wrapping stage's own stages in its place)."""
        return [
            inner.name
            for stage in self.stages
            for inner in (stage.stages if isinstance(stage, AsRequest) else (stage,))
        ]

    @property
    def outcomes(self) -> dict[str, int]:
        """How many events each stage ended, by ``stage:kind``."""
        return self.settle.counts

    async def run(self, turn: Arrival) -> None:
        for stage in self.stages:
            outcome = await stage(turn)
            if outcome is not None:
                if outcome is not SETTLED:
                    await self.settle(turn, stage.name, outcome)
                return
