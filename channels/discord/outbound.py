"""Discord's outbound side: a message rendered into parts and posted (in order per channel, each part with a nonce
so a resend never doubles it), an edit (through the press's interaction while its token lives), and "typing…"."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import discord

from bot.clock import Clock
from bot.events import OutboundMessage
from channels.discord.buttons import make_view
from channels.discord.calls import DiscordError, Retrying, parse_ref
from channels.discord.media import with_file
from channels.formatting import rendered, split_markdown, to_discord_markdown

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 2000
INTERACTION_TTL_S = 14 * 60
"""Interaction tokens live 15 minutes; past this, edits go through the channel."""


class DiscordOutbound:
    """Sends for :class:`~channels.discord.adapter.DiscordChannel` (its ``send``), with the per-channel send locks,
    the typing indicators kept up, and the presses' interactions remembered for edits."""

    def __init__(
        self,
        *,
        retry: Retrying,
        clock: Clock,
        logged_in: Callable[[], Awaitable[discord.Client]],
        rest: Callable[[], AbstractAsyncContextManager[discord.Client]],
        stopped: Callable[[], bool],
        typing_interval_s: float,
        typing_max_s: float,
    ) -> None:
        """``logged_in``: the adapter's logged-in client; ``rest``: it, or after ``stop`` a short-lived one;
        ``stopped``: whether the adapter was stopped (no typing then)."""
        self.retry = retry
        self.clock = clock
        self._logged_in = logged_in
        self._rest = rest
        self._stopped = stopped
        self.typing_interval_s = typing_interval_s
        self.typing_max_s = typing_max_s
        self.interaction_ttl_s = INTERACTION_TTL_S
        self._typing: dict[int, asyncio.Task[None]] = {}
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()
        self._interactions: dict[int, tuple[discord.Interaction[Any], float]] = {}

    async def stop(self) -> None:
        """Stop every typing indicator; forget the interactions."""
        for task in self._typing.values():
            task.cancel()
        await asyncio.gather(*self._typing.values(), return_exceptions=True)
        self._typing.clear()
        self._interactions.clear()

    def remember(self, interaction: discord.Interaction[Any]) -> None:
        """A press's interaction: an edit of its message within the token's life goes through it."""
        now = self.clock.monotonic()
        for key in [k for k, (_, at) in self._interactions.items() if now - at > self.interaction_ttl_s]:
            del self._interactions[key]
        if interaction.message is not None:
            self._interactions[interaction.message.id] = (interaction, now)

    async def send(self, message: OutboundMessage) -> str | None:
        where = message.chat.thread_id or message.chat.chat_id
        if not where.isdigit():
            raise DiscordError(f"not a Discord channel: {message.chat}")
        target = int(where)
        if message.kind == "typing":
            if not self._stopped():
                client = await self._logged_in()
                await self._type(client, target)
                self._start_typing(client, target)
            return None
        if message.edit_of is not None:
            return await self._edit(message.edit_of, message)
        self._stop_typing(target)
        lock = self._locks.get(target)
        if lock is None:
            lock = self._locks[target] = asyncio.Lock()
        # One channel's messages go out one at a time, in order (chunks of a long text stay together).
        async with lock, self._rest() as client:
            return await self._post(client, target, message)

    async def _post(self, client: discord.Client, target: int, message: OutboundMessage) -> str | None:
        chunks = await rendered(_chunks, message.text)
        view = make_view(message.buttons)
        if not chunks:
            if view is None and message.file is None:
                return None
            chunks = [""]
        channel = client.get_partial_messageable(target)
        upload = message.file
        reference = None
        if message.reply_to and message.reply_to.isdigit():
            reference = discord.MessageReference(
                message_id=int(message.reply_to), channel_id=target, fail_if_not_exists=False
            )
        nonce = part_nonces(message.key)
        ref = None
        for index, chunk in enumerate(chunks):
            last = index == len(chunks) - 1
            kwargs: dict[str, Any] = {"content": chunk or None, "nonce": nonce(index)}
            if last and view is not None:
                kwargs["view"] = view
            if index == 0 and reference is not None:
                kwargs["reference"] = reference
                kwargs["mention_author"] = False
            if last and upload is not None:  # a fresh file object per attempt: a retry reads it again
                kwargs["file_path"] = (upload.path, upload.name)
            sent = await self.retry("send a message", lambda kw=kwargs: channel.send(**with_file(kw)))  # type: ignore[misc]
            ref = f"{target}:{sent.id}"
        return ref

    async def _edit(self, edit_of: str, message: OutboundMessage) -> str:
        channel_id, message_id = parse_ref(edit_of)
        chunks = await rendered(_chunks, message.text)
        # The reference is a prompt's last message; an edit that outgrew it keeps its end (the outcome).
        content = chunks[-1] if chunks else "\u200b"
        view = make_view(message.buttons)
        fresh = self._interactions.get(message_id)
        if fresh is not None and self.clock.monotonic() - fresh[1] < self.interaction_ttl_s:
            interaction = fresh[0]
            try:
                await self.retry(
                    "edit a message", lambda: interaction.edit_original_response(content=content, view=view)
                )
                return edit_of
            except DiscordError as exc:
                log.info("discord: editing through the interaction failed (%s); using the channel", exc)
        self._interactions.pop(message_id, None)
        async with self._rest() as client:
            target = client.get_partial_messageable(channel_id).get_partial_message(message_id)
            await self.retry("edit a message", lambda: target.edit(content=content, view=view))
        return edit_of

    # -- typing -------------------------------------------------------------------------

    async def _type(self, client: discord.Client, channel_id: int) -> None:
        """Show "typing…" once (best effort: a lost indicator is no reason to fail a run)."""
        try:
            await client.http.send_typing(channel_id)
        except (discord.HTTPException, discord.RateLimited, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.debug("discord: typing in %s failed: %s", channel_id, exc)

    def _start_typing(self, client: discord.Client, channel_id: int) -> None:
        self._stop_typing(channel_id)
        self._typing[channel_id] = asyncio.create_task(
            self._keep_typing(client, channel_id), name=f"discord-typing-{channel_id}"
        )

    def _stop_typing(self, channel_id: int) -> None:
        task = self._typing.pop(channel_id, None)
        if task is not None:
            task.cancel()

    async def _keep_typing(self, client: discord.Client, channel_id: int) -> None:
        deadline = self.clock.monotonic() + self.typing_max_s
        try:
            while self.clock.monotonic() + self.typing_interval_s < deadline:
                await self.clock.sleep(self.typing_interval_s)
                await self._type(client, channel_id)
        finally:
            if self._typing.get(channel_id) is asyncio.current_task():
                del self._typing[channel_id]


def part_nonces(key: str | None) -> Callable[[int], str]:
    """The nonce of each part of a message (at most 25 characters, Discord's limit).

    From the message's idempotency key, so the same committed message sent again after a crash (by this process
    or another) has the same nonces, and Discord, which discord.py asks to enforce them, answers each with the
    message it already made instead of posting it again.  Not from the outbox row's id: SQLite gives a new row
    the id of a deleted one (sent rows are deleted), so two different replies a minute apart would share it and
    Discord would drop the second.  Without a key: random, still one per part (a retry never doubles a part).
    """
    base = hashlib.sha256(key.encode()).hexdigest()[:20] if key else secrets.token_hex(10)
    return lambda index: f"{base}{index}"


def _chunks(text: str) -> list[str]:
    return split_markdown(to_discord_markdown(text), MESSAGE_LIMIT) if text.strip() else []
