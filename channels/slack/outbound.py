"""Slack's outbound side: a message posted in parts (buttons on the last, a file uploaded with the last part as
its comment), an edit (``chat.update``), an answer through a slash command's ``response_url`` where the bot is
not a member, and the typing reaction (Slack has no typing indicator for bots); with what it remembers of the
inbound side: the newest post per chat, the threads the bot takes part in and the commands' ``response_url``."""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Generic, TypeVar

from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.clock import Clock
from bot.events import ChatKey, OutboundMessage
from channels.formatting import rendered
from channels.slack.delivery import TEXT_LIMIT, SlackDeliveryError, WebApi, blocks, render
from channels.slack.inbound import message_ref, parse_ref
from channels.slack.media import upload

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

RESPONSE_URL_TTL_S = 25 * 60
"""A slash command's ``response_url`` works for 30 minutes."""
_NOT_A_MEMBER = frozenset({"not_in_channel", "channel_not_found"})


class Recent(Generic[K, V]):
    """A bounded map that forgets the least recently written keys first."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items


class SlackOutbound:
    """Sends for :class:`~channels.slack.adapter.SlackChannel` (its ``send``)."""

    def __init__(self, api: WebApi, clock: Clock, *, reaction: str) -> None:
        """``reaction``: the typing reaction's name (empty: none)."""
        self.api = api
        self.clock = clock
        self.threads: Recent[tuple[str, str], bool] = Recent()
        """Threads (channel, thread_ts) and whether the bot takes part in them (the inbound side's too)."""
        self.last_post: Recent[str, tuple[str, str]] = Recent()
        """The newest post per chat key: where a typing reaction goes."""
        self.response_urls: Recent[str, tuple[str, float]] = Recent(1000)
        """Per channel: the last slash command's ``response_url`` and when it came."""
        self._reacted: Recent[str, tuple[str, str]] = Recent()
        self._reaction = reaction

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind == "typing":
            await self._typing(message.chat)
            return None
        try:
            if message.edit_of is not None:
                return await self._edit(message)
            return await self._post(message)
        finally:
            await self._typing_done(message.chat)

    async def _post(self, message: OutboundMessage) -> str | None:
        channel, thread = message.chat.chat_id, message.chat.thread_id
        parts = await rendered(render, message.text)
        if message.file is not None:
            comment = parts.pop() if parts else ""
            for part in parts:
                await self.api.post(channel=channel, text=part, thread_ts=thread)
            return message_ref(channel, await upload(self.api, channel, thread, message.file, comment))
        if not parts and not message.buttons:
            return None
        parts = parts or [""]
        ref = None
        try:
            for i, part in enumerate(parts):
                kwargs: dict[str, Any] = {"channel": channel, "text": part or " ", "thread_ts": thread}
                if i == len(parts) - 1 and message.buttons:
                    kwargs["blocks"] = blocks(part, message.buttons)
                posted = await self.api.post(**kwargs)
                ref = message_ref(posted["channel"], posted["ts"])
        except SlackDeliveryError as exc:
            url = self._response_url(channel) if thread is None and exc.error in _NOT_A_MEMBER else None
            if url is None:
                raise
            # A slash command in a channel the bot is not in: answer the person who ran it.
            await AsyncWebhookClient(url).send(text="\n".join(parts), response_type="ephemeral")
            return None
        if thread is not None:
            self.threads.put((channel, thread), True)
        return ref

    async def _edit(self, message: OutboundMessage) -> str:
        assert message.edit_of is not None
        channel, ts = parse_ref(message.edit_of)
        parts = await rendered(lambda text: render(text, TEXT_LIMIT - 2), message.text)
        text = (parts[0] + " …" if len(parts) > 1 else parts[0]) if parts else " "
        await self.api.call(
            "chat.update",
            channel=channel,
            ts=ts,
            text=text,
            blocks=blocks(text, message.buttons) if message.buttons else [],
        )
        return message.edit_of

    def _response_url(self, channel: str) -> str | None:
        found = self.response_urls.get(channel)
        if found is None or self.clock.monotonic() - found[1] > RESPONSE_URL_TTL_S:
            return None
        return found[0]

    async def _typing(self, chat: ChatKey) -> None:
        """Slack has no typing indicator for bots: mark the post being answered with a reaction."""
        target = self.last_post.pop(str(chat)) if self._reaction else None
        if target is None or str(chat) in self._reacted:
            return
        if await self._react("reactions.add", target):
            self._reacted.put(str(chat), target)

    async def _typing_done(self, chat: ChatKey) -> None:
        target = self._reacted.pop(str(chat))
        if target is not None:
            await self._react("reactions.remove", target)

    async def _react(self, method: str, target: tuple[str, str]) -> bool:
        try:
            await self.api.call_once(method, channel=target[0], timestamp=target[1], name=self._reaction)
            return True
        except SlackDeliveryError as exc:
            if exc.error in ("missing_scope", "not_allowed_token_type", "invalid_name"):
                log.warning("slack: typing reactions are off (%s; the bot token needs reactions:write)", exc.error)
                self._reaction = ""
            elif exc.error not in ("already_reacted", "no_reaction", "message_not_found"):
                log.debug("slack: %s", exc)
            return False
