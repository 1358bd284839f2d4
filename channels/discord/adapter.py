"""The Discord adapter: the client's log-in and gateway connection, and gateway events → bus events (see the
package docstring); outbound messages → REST calls are :mod:`channels.discord.outbound`'s."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bot.clock import SYSTEM_CLOCK, Clock
from bot.errors import ConfigError
from bot.events import Action, Attachment, ChatKey, InboundMessage, OutboundMessage, Sender
from bot.inbox import Inbox, InboxClosed, NotStored
from channels.base import BuildContext
from channels.discord.buttons import PayloadButton, is_ours
from channels.discord.calls import DiscordError, Retrying, endpoints
from channels.discord.outbound import MESSAGE_LIMIT, DiscordOutbound
from channels.discord.settings import DiscordSettings
from channels.retry_logs import quiet_retries

log = logging.getLogger(__name__)

MESSAGE_CONTENT_INTENT = (
    "channels.discord: Discord refused the connection because the bot lacks the Message Content intent. "
    "Turn it on in the Discord Developer Portal: your application → Bot → Privileged Gateway Intents → "
    "MESSAGE CONTENT INTENT, save, then start the bot again."
)
INACTIVE_BUTTON = "This button is no longer active."


class _Client(discord.Client):
    """discord.py's client, wired to one adapter."""

    def __init__(self, adapter: DiscordChannel) -> None:
        # Only what the adapter reads: guilds (the channel and thread cache), messages, and their content
        # (a privileged intent: enable "Message Content Intent" for the bot in the developer portal).
        intents = discord.Intents(guilds=True, guild_messages=True, dm_messages=True, message_content=True)
        # A text bot: discord.py's warnings about missing voice libraries would only confuse operators.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        super().__init__(
            intents=intents,
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False),
            max_ratelimit_timeout=30.0,
        )
        self.adapter = adapter
        self.connected = asyncio.Event()

    async def setup_hook(self) -> None:
        # Presses on prompts from before a restart match the template, whatever message they are on.
        self.add_dynamic_items(PayloadButton)

    async def on_connect(self) -> None:
        self.connected.set()

    async def on_message(self, message: discord.Message) -> None:
        await self.adapter.on_message(message)

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        await self.adapter.on_foreign_press(interaction)


class DiscordChannel:
    """The Discord adapter (the package docstring has the mapping)."""

    name = "discord"
    text_limit = MESSAGE_LIMIT
    dedupes_by_key = True
    """Two sends of a message with one ``key`` make one message (within Discord's memory of nonces): see
    :func:`part_nonces`."""
    """The longest text one message holds (a longer confirmation is shown in full on request)."""

    def __init__(
        self,
        cfg: DiscordSettings,
        *,
        typing_interval_s: float = 8.0,
        typing_max_s: float = 120.0,
        retry_attempts: int = 8,
        retry_budget_s: float = 300.0,
        connect_timeout_s: float = 30.0,
        on_rate_limit: Callable[[], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``on_rate_limit``: called for each 429 this adapter sees (discord.py waits out most by itself);
        ``clock``: what retries and the typing refresh wait on, and a press's interaction ages by."""
        self.cfg = cfg
        self.clock = clock
        self.retry = Retrying(retry_attempts, retry_budget_s, on_rate_limit, clock)
        self.connect_timeout_s = connect_timeout_s
        self._allowed = {str(c) for c in cfg.allowed_channels}
        self._inbox: Inbox | None = None
        self._client: _Client | None = None
        self._stopped = False
        self._login = asyncio.Lock()
        self._inbound = asyncio.Lock()
        self._gateway: asyncio.Task[None] | None = None
        self._out = DiscordOutbound(
            retry=self.retry,
            clock=clock,
            logged_in=self._logged_in,
            rest=self._rest,
            stopped=lambda: self._stopped,
            typing_interval_s=typing_interval_s,
            typing_max_s=typing_max_s,
        )
        self._parents: dict[int, int | None] = {}

    @property
    def exclusive_key(self) -> str:
        """One gateway session per bot (one shard): a second would receive every event again."""
        return "discord:" + hashlib.sha256(self.cfg.token.encode()).hexdigest()[:16]

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self, inbox: Inbox) -> None:
        """Log in (if ``send`` has not yet), connect to the gateway and return once it is up (or in 30 s)."""
        self._inbox = inbox
        self._stopped = False
        client = await self._logged_in()
        quiet_retries(("discord.client", "discord.gateway"), log, "discord: the gateway connection failed",
                      failing=("Attempting a reconnect in",), working=("has connected to Gateway", "RESUMED session"),
                      every_s=1024)  # fmt: skip
        self._gateway = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        connected = asyncio.create_task(client.connected.wait())
        done, _ = await asyncio.wait(
            {self._gateway, connected}, timeout=self.connect_timeout_s, return_when="FIRST_COMPLETED"
        )
        connected.cancel()
        if self._gateway in done:
            exc = self._gateway.exception()
            await self.stop()
            if isinstance(exc, discord.PrivilegedIntentsRequired):
                raise ConfigError(MESSAGE_CONTENT_INTENT) from None
            raise DiscordError(f"Discord gateway: could not connect: {exc or 'closed'}") from exc
        if not done:
            log.warning("discord: the gateway is not up after %.0f s; still trying", self.connect_timeout_s)
        self._gateway.add_done_callback(_report_gateway_end)

    async def stop(self) -> None:
        self._stopped = True
        self._inbox = None
        await self._out.stop()
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._gateway is not None:
            await asyncio.gather(self._gateway, return_exceptions=True)
            self._gateway = None

    async def _logged_in(self) -> _Client:
        async with self._login:
            if self._client is None:
                self._client = await self._new_client()
            return self._client

    async def _new_client(self) -> _Client:
        if not self.cfg.token:
            raise DiscordError("channels.discord.token is empty: set DISCORD_BOT_TOKEN")
        api, gateway = endpoints(self.cfg.api_base, self.cfg.gateway_url)
        Route.BASE = api
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway)
        client = _Client(self)
        try:
            await self.retry("log in", lambda: client.login(self.cfg.token))
        except BaseException:
            await client.close()
            raise
        return client

    @asynccontextmanager
    async def _rest(self) -> AsyncIterator[_Client]:
        """The logged-in client; after ``stop`` (runs draining) a short-lived one, closed afterwards."""
        if not self._stopped:
            yield await self._logged_in()
            return
        client = await self._new_client()
        try:
            yield client
        finally:
            await client.close()

    # -- inbound ------------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        # In gateway order: a message that needs a channel lookup holds back the ones after it.
        # Discord never delivers an event again, so it is committed first thing on receipt.
        async with self._inbound:
            event = await self._inbound_message(message)
            if event is not None:
                await self._submit(event)

    async def _inbound_message(self, message: discord.Message) -> InboundMessage | None:
        client = self._client
        if self._inbox is None or client is None or client.user is None:
            return None
        if message.author.bot or message.webhook_id is not None:
            return None
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return None
        chat = await self._chat_of(message.channel, message.guild is not None)
        if message.guild is not None and self._allowed and chat.chat_id not in self._allowed:
            return None
        text, mentioned = _strip_mention(message, client.user.id)
        attachments = tuple(
            Attachment(
                kind=(a.content_type or "file").split("/")[0],
                name=a.filename,
                mime_type=a.content_type,
                size=a.size,
                ref=a.url,
            )
            for a in message.attachments
        )
        if not text and not attachments:
            return None
        reference = message.reference
        return InboundMessage(
            id=str(message.id),
            chat=chat,
            sender=Sender(id=str(message.author.id), name=message.author.display_name),
            text=text,
            is_direct=message.guild is None,
            mentions_bot=mentioned or _replies_to(message, client.user.id),
            reply_to=str(reference.message_id) if reference and reference.message_id else None,
            attachments=attachments,
        )

    async def on_press(self, interaction: discord.Interaction[Any], payload: str) -> None:
        """A press on one of our buttons: acknowledge now, check, then publish."""
        try:
            await interaction.response.defer()
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("discord: could not acknowledge press %s: %s", interaction.id, exc)
        if self._inbox is None or interaction.message is None:
            return
        user = interaction.user
        action = Action(
            id=str(interaction.id),
            chat=await self._chat_of(interaction.channel, interaction.guild_id is not None, interaction.channel_id),
            sender=Sender(id=str(user.id), name=user.display_name, is_bot=user.bot),
            payload=payload,
            message_ref=f"{interaction.message.channel.id}:{interaction.message.id}",
            platform={"interaction_id": str(interaction.id), "application_id": str(interaction.application_id)},
        )
        if self._inbox is not None:
            try:
                refusal = await self._inbox.check_press(action)
            except Exception:
                # The gateway checks again in the chat's turn, where it is authoritative.
                log.exception("discord: press check failed for %s; passing the press on", interaction.id)
                refusal = None
            if refusal:
                try:
                    await self.retry("answer a press", lambda: interaction.followup.send(refusal, ephemeral=True))
                except DiscordError as exc:
                    log.warning("discord: could not tell %s why their press was refused: %s", user.id, exc)
                return
        self._out.remember(interaction)
        await self._submit(action)

    async def on_foreign_press(self, interaction: discord.Interaction[Any]) -> None:
        """A component that is not ours (an old payload format): say so instead of letting it time out."""
        if interaction.type is not discord.InteractionType.component or interaction.response.is_done():
            return
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id", ""))
        if not is_ours(custom_id):
            await interaction.response.send_message(INACTIVE_BUTTON, ephemeral=True)

    async def _submit(self, event: InboundMessage | Action) -> None:
        inbox = self._inbox
        try:
            if inbox is None:
                raise InboxClosed("the Discord channel is stopping")
            await inbox.submit(event)
        except InboxClosed:
            # Discord will not deliver it again: only what arrives while stopping is lost (and logged).
            log.warning("discord: shutting down, event %s not taken", event.id)
        except NotStored as exc:
            log.error("discord: could not store event %s: %s", event.id, exc)
            await self._tell_not_saved(event)

    async def _tell_not_saved(self, event: InboundMessage | Action) -> None:
        """Discord has no redelivery: a message that could not be stored is answered, never silently lost."""
        try:
            await self.send(
                OutboundMessage(
                    chat=event.chat,
                    text="⚠️ I could not save your message, so I did not act on it. Please send it again.",
                    kind="notice",
                )
            )
        except (DiscordError, discord.HTTPException) as exc:
            log.warning("discord: could not tell %s: %s", event.chat, exc)

    async def _chat_of(self, channel: Any, in_guild: bool, channel_id: int | None = None) -> ChatKey:
        """The chat key of a channel: a thread is keyed under its parent."""
        cid = int(getattr(channel, "id", None) or channel_id or 0)
        parent: int | None
        if isinstance(channel, discord.Thread):
            parent = channel.parent_id
        elif not in_guild or isinstance(channel, discord.abc.GuildChannel):
            parent = None
        else:
            parent = await self._parent_of(cid)
        if parent is None:
            return ChatKey(channel=self.name, chat_id=str(cid))
        return ChatKey(channel=self.name, chat_id=str(parent), thread_id=str(cid))

    async def _parent_of(self, channel_id: int) -> int | None:
        """For a guild channel discord.py has not cached: its parent when it is a thread (asked once)."""
        if channel_id not in self._parents:
            try:
                async with self._rest() as client:
                    channel = await self.retry("look up a channel", lambda: client.fetch_channel(channel_id))
            except DiscordError as exc:
                log.warning("discord: channel %s is taken as a plain channel: %s", channel_id, exc)
                return None
            if len(self._parents) > 10_000:
                self._parents.clear()
            self._parents[channel_id] = channel.parent_id if isinstance(channel, discord.Thread) else None
        return self._parents[channel_id]

    # -- outbound -----------------------------------------------------------------------

    def send(self, message: OutboundMessage) -> Coroutine[Any, Any, str | None]:
        """Post, edit or show typing (:class:`~channels.discord.outbound.DiscordOutbound`; its coroutine itself,
        no wrapper)."""
        return self._out.send(message)


def _strip_mention(message: discord.Message, bot_id: int) -> tuple[str, bool]:
    """The text without the bot's own mention, and whether it was there."""
    patterns = [rf"<@!?{bot_id}>"]
    role = message.guild.self_role if message.guild is not None else None
    if role is not None:
        patterns.append(rf"<@&{role.id}>")
    mentioned = any(u.id == bot_id for u in message.mentions) or (role is not None and role in message.role_mentions)
    text, count = re.subn(rf"(?:{'|'.join(patterns)})[ \t]*", "", message.content)
    return text.strip(), mentioned or count > 0


def _replies_to(message: discord.Message, bot_id: int) -> bool:
    resolved = message.reference.resolved if message.reference is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == bot_id


def _report_gateway_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("discord: the gateway connection ended: %s", task.exception())


def build(settings: DiscordSettings, context: BuildContext) -> DiscordChannel:
    """The channel plugin's factory (:mod:`channels.registry`)."""
    clock: Clock = context.clock or SYSTEM_CLOCK
    return DiscordChannel(settings, on_rate_limit=context.limiter("discord"), clock=clock)
