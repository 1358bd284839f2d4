"""Calling the Bot API without losing messages: flood control, pacing, bounded retries.

Telegram's limits (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this):
about one message a second per chat (short bursts are tolerated), 20 a minute in a
group, 30 a second overall.  :class:`Pacer` keeps under them with token buckets; a
429 anyway means waiting ``retry_after`` and sending again, up to a bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aiogram import Bot
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramEntityTooLarge,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods.base import Response, TelegramMethod

from bot.limits import TokenBuckets
from bot.retry import retry

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_FLOOD_WAIT_S = 600.0
"""Longest total wait for flood control on one call; past it the call fails (and the gateway reports it)."""
MAX_FLOOD_RETRIES = 10
NETWORK_ATTEMPTS = 4
NETWORK_BACKOFF_S = (0.5, 1.0, 2.0)


class TelegramDeliveryError(RuntimeError):
    """A Bot API call failed for good.  The text never contains the token."""


class Pacer:
    """Per-chat and overall token buckets (:class:`~bot.limits.TokenBuckets`), plus the holds a 429 imposes."""

    PRIVATE = (5, 1.0)
    """(burst, messages per second) for a private chat."""
    GROUP = (5, 20 / 60)
    OVERALL = (30, 30.0)
    KEEP = 10_000
    """Chats whose bucket is remembered (least recently used go first)."""

    def __init__(
        self,
        private: tuple[float, float] = PRIVATE,
        group: tuple[float, float] = GROUP,
        overall: tuple[float, float] = OVERALL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.private, self.group, self.overall = (
            TokenBuckets(rate, burst, max_keys=self.KEEP, clock=clock) for burst, rate in (private, group, overall)
        )

    def _chats(self, chat: str) -> TokenBuckets:
        # Group and channel ids are negative, users' ids positive.
        return self.group if chat.startswith("-") else self.private

    def delay(self, chat: str | None) -> float:
        """Take a token (overall, and ``chat``'s) and return how long to wait before using it."""
        delay = self.overall.reserve("")
        return delay if chat is None else max(delay, self._chats(chat).reserve(chat))

    async def wait(self, chat: str | None) -> None:
        delay = self.delay(chat)
        if delay > 0:
            await asyncio.sleep(delay)

    def hold(self, chat: str, seconds: float) -> None:
        """Nothing more goes to ``chat`` for ``seconds`` (after a 429)."""
        self._chats(chat).hold(chat, seconds)


_RESPONSE_MODELS: dict[Any, Any] = {}


def keep_response_model(method: TelegramMethod[Any]) -> None:
    """aiogram reads every answer with ``Response[T]``, a pydantic generic model that pydantic caches only
    weakly: after each garbage collection the next call built it again (measured: a fifth of a busy gateway's
    time in Telegram calls went to making these classes).  Held here, each is made once per process."""
    returning = method.__returning__
    if returning not in _RESPONSE_MODELS:
        _RESPONSE_MODELS[returning] = Response[returning]  # type: ignore[valid-type]


class Api:
    """One place that calls the Bot API: pacing, 429 waits and network retries, errors without the token."""

    def __init__(self, bot: Bot, on_rate_limit: Callable[[], None] | None = None) -> None:
        self.bot = bot
        self.pacer = Pacer()
        self._on_rate_limit = on_rate_limit

    def limited(self) -> None:
        """Telegram answered 429."""
        if self._on_rate_limit is not None:
            self._on_rate_limit()

    def redact(self, text: str) -> str:
        return text.replace(self.bot.token, "***")

    async def call(self, method: TelegramMethod[T], *, chat: str | None = None, paced: bool = False) -> T:
        """Send ``method``; ``paced`` calls (messages, edits) count against ``chat``'s flood limits.

        Telegram's own errors (bad request, forbidden, …) propagate as aiogram exceptions
        for the caller to interpret; flood waits and network failures are retried here.
        """
        name = type(method).__name__
        flood_waited, floods, failures = 0.0, 0, 0

        async def once() -> T:
            if paced:
                await self.pacer.wait(chat)
            keep_response_model(method)
            return await self.bot(method)

        def delay_after(exc: Exception, _attempt: int) -> float | None:
            nonlocal flood_waited, floods, failures
            if isinstance(exc, TelegramRetryAfter):
                self.limited()
                wait = float(exc.retry_after)
                floods += 1
                if floods > MAX_FLOOD_RETRIES or flood_waited + wait > MAX_FLOOD_WAIT_S:
                    raise TelegramDeliveryError(
                        f"telegram {name}: still rate-limited after waiting {flood_waited:.0f} s (chat {chat})"
                    ) from None
                log.warning("telegram %s: flood control in chat %s, retrying in %.0f s", name, chat, wait)
                if chat is not None:
                    self.pacer.hold(chat, wait)
                flood_waited += wait
                return wait
            if isinstance(exc, TelegramEntityTooLarge):
                raise TelegramDeliveryError(f"telegram {name}: {self.redact(str(exc))}") from None
            if isinstance(exc, TelegramNetworkError | TelegramServerError | ClientDecodeError):
                failures += 1
                reason = self.redact(str(exc))
                if failures >= NETWORK_ATTEMPTS:
                    raise TelegramDeliveryError(f"telegram {name}: failed {failures} times: {reason}") from None
                backoff = NETWORK_BACKOFF_S[min(failures, len(NETWORK_BACKOFF_S)) - 1]
                log.warning("telegram %s: %s; retrying in %.1f s", name, reason, backoff)
                return backoff
            return None  # Telegram's own errors (bad request, forbidden, …): the caller's

        return await retry(once, delay_after)
