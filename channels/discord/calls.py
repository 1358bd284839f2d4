"""Calling Discord: where its endpoints are, what a message reference is, and retrying what may be retried."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import discord

from bot.clock import SYSTEM_CLOCK, Clock
from bot.retry import retry

log = logging.getLogger(__name__)

T = TypeVar("T")

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"


class DiscordError(RuntimeError):
    """A Discord call failed for good (after bounded retries); the text never holds the token."""


def endpoints(api_base: str | None, gateway_url: str | None = None) -> tuple[str, str]:
    """The REST base (``…/api/v10``) and gateway URL for ``api_base`` (a root URL or one ending in ``/api/vN``)."""
    if not api_base:
        return DISCORD_API, gateway_url or DISCORD_GATEWAY
    base = api_base.rstrip("/")
    api = base if re.search(r"/api/v\d+$", base) else f"{base}/api/v10"
    root = re.sub(r"/api/v\d+$", "", base)
    return api, gateway_url or re.sub(r"^http", "ws", root) + "/gateway"


def parse_ref(ref: str) -> tuple[int, int]:
    """``"<channel id>:<message id>"`` (what ``send`` returns) → the two ids."""
    channel, sep, message = ref.partition(":")
    if not sep or not channel.isdigit() or not message.isdigit():
        raise DiscordError(f"not a Discord message reference: {ref!r} (expected channel_id:message_id)")
    return int(channel), int(message)


class Retrying:
    """Runs a Discord call, retrying 429s, 5xx and network errors within ``attempts`` and ``budget_s``.

    discord.py already waits out the 429s that carry Discord's headers (up to 5 tries; waits longer than
    its ``max_ratelimit_timeout`` come back as :class:`discord.RateLimited`).  This catches the rest: those
    waits, 429s without Discord's headers (a proxy's), server errors and dropped connections.  Any other
    error (403, 404, a bad request, a rejected token) raises :class:`DiscordError` at once.
    """

    def __init__(
        self,
        attempts: int = 8,
        budget_s: float = 300.0,
        on_rate_limit: Callable[[], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.clock = clock
        self.attempts = attempts
        self.budget_s = budget_s
        self._on_rate_limit = on_rate_limit

    async def __call__(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        deadline = self.clock.monotonic() + self.budget_s

        def delay_after(exc: Exception, attempt: int) -> float | None:
            if isinstance(exc, discord.RateLimited):
                self._limited()
                delay, reason = exc.retry_after, f"rate limited for {exc.retry_after:.1f} s"
            elif isinstance(exc, discord.HTTPException):
                reason = f"HTTP {exc.status}: {exc.text or exc.__class__.__name__}"
                if exc.status == 429:
                    self._limited()
                    delay = retry_after(exc.response) or 1.0
                elif exc.status >= 500:
                    delay = min(2.0**attempt, 30.0)
                else:
                    raise DiscordError(f"Discord: could not {what}: {reason}") from exc
            elif isinstance(exc, discord.LoginFailure):
                raise DiscordError(f"Discord: could not {what}: the token was rejected") from exc
            elif isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
                delay, reason = min(2.0**attempt, 30.0), f"{exc.__class__.__name__}: {exc}"
            else:
                return None
            if attempt == self.attempts or self.clock.monotonic() + delay > deadline:
                raise DiscordError(f"Discord: could not {what} after {attempt} attempts: {reason}")
            network = isinstance(exc, aiohttp.ClientError | OSError | TimeoutError)  # its caller tells a failure
            log.log(logging.INFO if network else logging.WARNING, "discord: %s failed (%s); retrying in %.2f s",
                    what, reason, delay)  # fmt: skip
            return delay

        return await retry(call, delay_after, clock=self.clock)

    def _limited(self) -> None:
        if self._on_rate_limit is not None:
            self._on_rate_limit()


def retry_after(response: Any) -> float | None:
    """The ``Retry-After`` header in seconds, if there is a usable one."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except (AttributeError, TypeError, ValueError):
        return None
