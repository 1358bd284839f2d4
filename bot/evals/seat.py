"""The person's seat in an eval: an in-process channel the gateway sends to, and the turns of one conversation.

The channel stands where a platform adapter stands (the gateway cannot tell it from the console): every message
the gateway sends is kept with the reference it got, so a prompt's buttons can be pressed later and the prompt
edited.  A turn submits one event through the gateway's inbox (committed, routed, run exactly as in a chat),
waits until the gateway has settled, and collects what the turn produced: the messages sent, the trace events
recorded, the time it took, and whether a pause is left waiting.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from agents.models.base import Model
from bot.clock import Clock
from bot.config.settings import Settings
from bot.events import Action, Attachment, Button, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.inbox import Inbox
from bot.models import ModelWrap
from bot.ops.budgets import Budgets
from bot.routing import Router
from bot.store.ports import Repos, Runs
from bot.tracing.event import TraceEvent
from bot.tracing.recorder import Tracing

TURN_TIMEOUT_S = 600.0
"""A turn still working after this long fails (a model or tool that hangs past its own timeouts)."""


class GatewayUnderTest(Protocol):
    """What a seat and the runner use of a gateway (:class:`bot.gateway.app.Gateway`).  A port: bot.evals sits
    below the composition root and does not import it; ``bot eval`` (and a test) hands the Gateway class in."""

    @property
    def inbox(self) -> Inbox: ...

    @property
    def runs(self) -> Runs: ...

    @property
    def tracing(self) -> Tracing: ...

    @property
    def budgets(self) -> Budgets | None: ...

    @property
    def repos(self) -> Repos[Any]: ...

    @property
    def router(self) -> Router: ...

    async def start(self) -> None: ...

    async def settled(self) -> None: ...

    async def stop(self, timeout: float = ...) -> None: ...


class GatewayFactory(Protocol):
    """Builds the gateway a trial runs on (the :class:`bot.gateway.app.Gateway` class fits)."""

    def __call__(
        self,
        settings: Settings,
        *,
        model: Model | None = ...,
        channels: Sequence[Any] | None = ...,
        clock: Clock = ...,
        wrap_models: ModelWrap | None = ...,
    ) -> GatewayUnderTest: ...


class TurnError(Exception):
    """A turn that could not be taken (no prompt to press, no such button, a file to attach missing)."""


class EvalChannel:
    """Where the gateway's messages to the eval's chat go: kept, with a reference each (as a platform gives)."""

    name = "console"

    def __init__(self) -> None:
        self.sent: list[tuple[str, OutboundMessage]] = []
        self._refs = itertools.count(1)

    async def start(self, inbox: Any) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind in ("typing", "draft"):
            return None
        ref = f"eval-{next(self._refs)}"
        self.sent.append((ref, message))
        return ref


@dataclass
class TurnLog:
    """What one turn produced."""

    messages: list[OutboundMessage] = field(default_factory=list)
    events: list[TraceEvent] = field(default_factory=list)
    latency_ms: float = 0.0
    waiting: bool = False
    """A pause is left pending after the turn."""
    prompt: str = ""
    """The text of the newest prompt with buttons sent in the turn."""

    @property
    def answer(self) -> str:
        """What the bot wrote: its messages, prompts included; notices and edits of earlier messages left out."""
        return "\n".join(m.text for m in self.messages if m.kind == "text" and m.edit_of is None and m.text)

    @property
    def notices(self) -> list[str]:
        return [m.text for m in self.messages if m.kind == "notice"]

    def of(self, type: str) -> list[TraceEvent]:
        return [e for e in self.events if e.type == type]

    @property
    def agent(self) -> str | None:
        """The agent routed to, or (a press, an answer) the first that went on."""
        route = self.of("route")
        if route:
            return route[0].agent
        return next((e.agent for e in self.events if e.agent and e.type != "interrupt"), None)

    @property
    def status(self) -> str | None:
        if self.waiting:
            return "waiting"
        ends = self.of("run")
        return str(ends[-1].data.get("status")) if ends else None


class Seat:
    """One person in one chat of a started gateway."""

    def __init__(
        self,
        gateway: GatewayUnderTest,
        channel: EvalChannel,
        sender: Sender,
        clock: Clock,
        chat_id: str,
        timeout_s: float = TURN_TIMEOUT_S,
    ) -> None:
        self.timeout_s = timeout_s
        self.gateway = gateway
        self.channel = channel
        self.sender = sender
        self.clock = clock
        self.chat = ChatKey(channel=channel.name, chat_id=chat_id)
        self._ids = itertools.count(1)
        self._seq = 0

    async def say(self, text: str, attach: Sequence[Path] = ()) -> TurnLog:
        attachments = tuple(_attachment(path) for path in attach)
        event = InboundMessage(
            id=f"eval-{next(self._ids)}",
            chat=self.chat,
            sender=self.sender,
            text=text,
            is_direct=True,
            mentions_bot=True,
            attachments=attachments,
        )
        return await self._turn(event)

    async def press(self, label: str | None = None, choice: str | None = None) -> TurnLog:
        ref, buttons = self._prompt()
        button = _by_label(buttons, label) if label is not None else _by_choice(buttons, choice or "")
        if button is None:
            wanted = f"label {label!r}" if label is not None else f"choice {choice!r}"
            if label is not None:
                shown = ", ".join(repr(b.label) for b in buttons)
            else:  # the choices, as a suite names them (the payload's last part), each with its label
                shown = ", ".join(f"{b.payload.rsplit(':', 1)[-1]!r} ({b.label})" for b in buttons)
            raise TurnError(f"the prompt has no button with {wanted} (it has {shown})")
        action = Action(
            id=f"eval-{next(self._ids)}", chat=self.chat, sender=self.sender, payload=button.payload, message_ref=ref
        )
        return await self._turn(action)

    def buttons(self) -> list[str]:
        """The labels of the newest prompt's buttons still shown (none: no prompt waits for a press)."""
        try:
            return [b.label for b in self._prompt()[1]]
        except TurnError:
            return []

    def pressable(self, label: str) -> bool:
        """A press of ``label`` finds a button (matched as :meth:`press` matches it)."""
        try:
            return _by_label(self._prompt()[1], label) is not None
        except TurnError:
            return False

    def _prompt(self) -> tuple[str, list[Button]]:
        """The newest message whose buttons are still shown (an edit replaces a message's buttons, as on a
        platform: a prompt edited to say how it was answered has none left)."""
        shown: dict[str, OutboundMessage] = {}
        for ref, message in self.channel.sent:
            shown[message.edit_of or ref] = message
        for ref, message in reversed(shown.items()):
            if message.buttons:
                return ref, [b for row in message.buttons for b in row]
        raise TurnError("there is no prompt with buttons to press")

    async def _turn(self, event: InboundMessage | Action) -> TurnLog:
        before = len(self.channel.sent)
        started = self.clock.monotonic()
        await self.gateway.inbox.submit(event)
        try:
            await asyncio.wait_for(self.gateway.settled(), self.timeout_s)
        except TimeoutError:
            raise TurnError(f"the turn did not finish within {self.timeout_s:g} s") from None
        latency = (self.clock.monotonic() - started) * 1000
        messages = [m for _ref, m in self.channel.sent[before:]]
        prompt = next((m.text for m in reversed(messages) if m.buttons and m.edit_of is None), "")
        events = await self.events()
        waiting = await self.gateway.runs.pending(str(self.chat)) is not None
        return TurnLog(messages=messages, events=events, latency_ms=latency, waiting=waiting, prompt=prompt)

    async def events(self) -> list[TraceEvent]:
        """The chat's trace events recorded since the last call."""
        await self.gateway.tracing.flush()
        rows = await self.gateway.tracing.traces.after(str(self.chat), self._seq)
        if rows:
            self._seq = int(rows[-1][0])
        return [event_of(row[1:]) for row in rows]


def event_of(row: tuple[Any, ...]) -> TraceEvent:
    """A stored trace event (``id, chat_key, correlation_id, run_id, agent, type, data, created_at``)."""
    at = row[7] if isinstance(row[7], datetime) else datetime.fromisoformat(str(row[7]))
    return TraceEvent(
        id=row[0],
        chat_key=row[1],
        correlation_id=row[2],
        run_id=row[3] or "",
        agent=row[4] or "",
        type=row[5],
        data=json.loads(row[6] or "{}"),
        at=at,
    )


def _attachment(path: Path) -> Attachment:
    if not path.is_file():
        raise TurnError(f"no file to attach at {path}")
    mime, _ = mimetypes.guess_type(path.name)
    major = (mime or "").split("/")[0]
    kind = {"image": "photo", "audio": "audio"}.get(major, "document")
    return Attachment(kind=kind, name=path.name, mime_type=mime, size=path.stat().st_size, ref=path.resolve().as_uri())


def _words(label: str) -> str:
    """A label without the emoji before it (``✅ Approve`` → ``approve``)."""
    head, _, rest = label.partition(" ")
    return (rest if rest and not head.isalnum() else label).casefold()


def _by_label(buttons: list[Button], label: str) -> Button | None:
    wanted = label.casefold()
    for match in (
        lambda b: b.label.casefold() == wanted or _words(b.label) == wanted,
        lambda b: b.label.casefold().startswith(wanted) or _words(b.label).startswith(wanted),
    ):
        found = next((b for b in buttons if match(b)), None)
        if found is not None:
            return found
    return None


def _by_choice(buttons: list[Button], choice: str) -> Button | None:
    return next((b for b in buttons if b.payload.rsplit(":", 1)[-1] == choice), None)
