"""Writes the database cannot take *now* (a full disk, a lock, a lost connection: :class:`StoreUnavailable`),
tried again with backoff until it can: the work they finish is not lost and nobody is asked to resend."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.clock import Clock
from bot.retry import Backoff, retry
from bot.store.writer import StoreUnavailable

T = TypeVar("T")

DELAYED = "⏳ I could not save my work just now; I will answer as soon as I can."
"""What a person hears (once) while their answer waits for the database."""
BACKOFF = Backoff(first_s=0.25, cap_s=5.0)
"""Once the database answers again, a waiting write goes within about ``cap_s``."""


async def until_stored(
    write: Callable[[], Awaitable[T]],
    clock: Clock,
    *,
    waiting: Callable[[StoreUnavailable], None] = lambda _exc: None,
    give_up_after_s: float = 3600.0,
) -> T:
    """``write()``, again after each :class:`StoreUnavailable` (``waiting`` is told of the first) for up to
    ``give_up_after_s``; any other error, and the last one, go to the caller."""

    def told(exc: Exception, attempt: int, _delay: float) -> None:
        if attempt == 1 and isinstance(exc, StoreUnavailable):
            waiting(exc)

    return await retry(write, BACKOFF.on(StoreUnavailable), clock=clock, budget_s=give_up_after_s, on_retry=told)
