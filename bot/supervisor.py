"""The Supervisor: decides what happens to each inbound event.

For each event, holding the chat's place in the bus (one event per chat at a
time): resolve the sender (access and admin rights come from configuration,
never from the platform), drop duplicates, run commands, else run the agent
and send its answer.  Every accepted message is stored before anything is
answered; every answer is stored before it is sent.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from agents.context import RunContext
from agents.messages import Message, fit_context
from agents.models.base import Model, ModelError
from agents.results import FinalAnswer, InterruptRequest, Runner
from bot.commands import CommandCall, CommandRegistry, parse_command
from bot.events import Action, ChatKey, InboundEvent, InboundMessage, OutboundMessage, Sender
from bot.outbox import Outbox
from bot.settings import ChannelSection, Settings
from bot.store.base import Store, StoreError

log = logging.getLogger(__name__)


@dataclass
class Agent:
    """A runnable agent as the supervisor knows it."""

    name: str
    runner: Runner
    title: str = ""
    description: str = ""


@dataclass
class Supervisor:
    settings: Settings
    store: Store
    outbox: Outbox
    model: Model
    agents: dict[str, Agent] = field(default_factory=dict)
    commands: CommandRegistry = field(default_factory=CommandRegistry)
    default_agent: str = "chat"

    def __post_init__(self) -> None:
        from bot.builtin_commands import register_builtin_commands

        register_builtin_commands(self)

    # -- access -----------------------------------------------------------------

    def channel_config(self, chat: ChatKey) -> ChannelSection | None:
        return getattr(self.settings.channels, chat.channel, None)

    def resolve_sender(self, chat: ChatKey, sender: Sender) -> tuple[Sender, bool]:
        """The sender with ``is_admin`` from configuration, and whether they are allowed."""
        config = self.channel_config(chat)
        if config is None:
            return sender.model_copy(update={"is_admin": False}), False
        resolved = sender.model_copy(update={"is_admin": config.is_admin(sender.id)})
        return resolved, config.allows(sender.id) or resolved.is_admin

    # -- entry point ------------------------------------------------------------

    async def handle(self, event: InboundEvent) -> None:
        sender, allowed = self.resolve_sender(event.chat, event.sender)
        event = event.model_copy(update={"sender": sender})
        event_key = f"{event.chat.channel}:{event.id}"
        if isinstance(event, Action):
            await self._on_action(event, event_key, allowed)
            return
        if sender.is_bot:
            return
        if not allowed:
            await self._refuse(event, event_key)
            return
        if not event.is_direct and not event.mentions_bot and self._mention_required(event.chat):
            return
        parsed = parse_command(event.text, frozenset({self.settings.bot.name.lower()}))
        if parsed is not None:
            if await self._accept(event, event_key, None):
                reply = await self.commands.dispatch(CommandCall(parsed[0], parsed[1], event))
                await self.send(OutboundMessage(chat=event.chat, text=reply, reply_to=event.id))
            return
        user_message = Message.user(event.text)
        if not await self._accept(event, event_key, user_message):
            return
        await self.run_agent(event, user_message)

    def _mention_required(self, chat: ChatKey) -> bool:
        config = self.channel_config(chat)
        return config is not None and config.mention_policy == "mention"

    async def _accept(self, event: InboundEvent, event_key: str, message: Message | None) -> bool:
        try:
            return await self.store.accept(event_key, str(event.chat), message)
        except StoreError as exc:
            log.error("chat %s: could not accept event %s: %s", event.chat, event.id, exc)
            await self.notice(event.chat, "⚠️ I could not save your message, so I did not act on it. Please resend.")
            return False

    async def _refuse(self, event: InboundMessage, event_key: str) -> None:
        config = self.channel_config(event.chat)
        if config is None or config.unknown_senders == "ignore":
            return
        if await self._accept(event, event_key, None):
            await self.notice(
                event.chat,
                f"Sorry, I only talk to approved users. Your user id is {event.sender.id}; "
                "ask the operator to add it to allow_from.",
            )

    async def _on_action(self, action: Action, event_key: str, allowed: bool) -> None:
        if not allowed or not await self._accept(action, event_key, None):
            return
        await self.notice(action.chat, "This request is no longer pending.")

    # -- agents -----------------------------------------------------------------

    async def build_context(self, chat: ChatKey, event: InboundMessage) -> RunContext:
        history = await self.store.history(str(chat), self.settings.store.history_limit)
        if history and history[-1].role == "user":
            history = history[:-1]  # the message being answered is passed on its own

        async def emit(text: str) -> None:
            await self.notice(chat, text)

        return RunContext(
            chat_key=str(chat),
            model=self.model,
            history=fit_context(history, self.settings.store.context_chars),
            emit=emit,
            correlation_id=f"{chat.channel}:{event.id}",
            user_id=event.sender.id,
        )

    async def run_agent(self, event: InboundMessage, message: Message, agent_name: str | None = None) -> None:
        agent = self.agents[agent_name or self.default_agent]
        ctx = await self.build_context(event.chat, event)
        await self.send(OutboundMessage(chat=event.chat, kind="typing"))
        started = time.perf_counter()
        try:
            result = await agent.runner.run(ctx, message)
        except ModelError as exc:
            log.warning("chat %s: model error in %s: %s", event.chat, agent.name, exc)
            await self.notice(event.chat, f"⚠️ The model failed: {exc}. Your message is saved; try again.")
            return
        except Exception:
            log.exception("chat %s: agent %s crashed", event.chat, agent.name)
            await self.notice(event.chat, "⚠️ Something went wrong while answering; the error was logged.")
            return
        log.debug("chat %s: %s answered in %.1f ms", event.chat, agent.name, (time.perf_counter() - started) * 1000)
        if isinstance(result, InterruptRequest):
            await self.notice(event.chat, "⚠️ This agent asked for input, which this gateway cannot handle yet.")
            return
        await self.deliver_answer(event, result)

    async def deliver_answer(self, event: InboundMessage, result: FinalAnswer) -> None:
        try:
            await self.store.append(str(event.chat), result.messages)
        except StoreError as exc:
            log.error("chat %s: could not store the answer: %s", event.chat, exc)
            await self.notice(event.chat, "⚠️ I could not save my answer, so I did not send it. Please try again.")
            return
        await self.send(OutboundMessage(chat=event.chat, text=result.text or "(no answer)", reply_to=event.id))

    # -- output -----------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> str | None:
        try:
            return await self.outbox.send(message)
        except Exception:
            log.exception("chat %s: could not deliver a %s message", message.chat, message.kind)
            return None

    async def notice(self, chat: ChatKey, text: str) -> None:
        await self.send(OutboundMessage(chat=chat, text=text, kind="notice"))
