"""Writes the database cannot take *now* (a full disk, a lock, a lost connection: :class:`StoreUnavailable`),
tried again with backoff until it can: the work they finish is not lost and nobody is asked to resend."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.clock import Clock
from bot.retry import Backoff, retry
from bot.store.base import StoreUnavailable

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
    ``give_up_after_s``; any other error, and the last one, go to the caller.

    The first try is made here, the rest through :func:`~bot.retry.retry`: a write that goes through (nearly all,
    one per answer) costs no retry machinery."""
    began = clock.monotonic()
    try:
        return await write()
    except StoreUnavailable as exc:
        first = BACKOFF.delay(1)
        if first > give_up_after_s:
            raise
        waiting(exc)
    await clock.sleep(first)
    left = give_up_after_s - (clock.monotonic() - began)
    later = BACKOFF.on(StoreUnavailable)
    return await retry(write, lambda exc, attempt: later(exc, attempt + 1), clock=clock, budget_s=left)
