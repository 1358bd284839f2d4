"""The one rate limiter: token buckets by key (a sender, a chat, a platform), bounded in how many keys they
remember, on the clock they are given.

A bucket holds up to ``burst`` tokens and refills at ``rate_per_s``.  :meth:`TokenBuckets.take` spends one if
there is one (a limit that refuses: the intake's per-sender rate); :meth:`TokenBuckets.reserve` always spends
one, into debt if need be, and says how long to wait before using it (a limit that paces: a platform's).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from bot.clock import SYSTEM_CLOCK


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    held_until: float = 0.0


class TokenBuckets:
    """Token buckets by key; the least recently used key is forgotten (starts afresh) past ``max_keys``."""

    def __init__(
        self,
        rate_per_s: float,
        burst: float,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = SYSTEM_CLOCK.monotonic,
    ) -> None:
        self.rate = rate_per_s
        self.burst = float(burst)
        self.max_keys = max_keys
        self.clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def _refilled(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self.burst, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + max(0.0, now - bucket.stamp) * self.rate)
            bucket.stamp = now
            self._buckets.move_to_end(key)
        return bucket

    def take(self, key: str, now: float | None = None) -> bool:
        """Spend a token of ``key`` if it has one: False (nothing spent) when it is over its rate."""
        bucket = self._refilled(key, self.clock() if now is None else now)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def give_back(self, key: str) -> None:
        """Return a token :meth:`take` spent (for something that did not happen after all)."""
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.tokens = min(self.burst, bucket.tokens + 1.0)

    def reserve(self, key: str, now: float | None = None) -> float:
        """Spend a token of ``key``, into debt if need be: the seconds to wait before using it (0: now)."""
        now = self.clock() if now is None else now
        bucket = self._refilled(key, now)
        bucket.tokens -= 1.0
        wait = 0.0 if bucket.tokens >= 0 else -bucket.tokens / self.rate if self.rate > 0 else float("inf")
        return max(wait, bucket.held_until - now)

    def hold(self, key: str, seconds: float, now: float | None = None) -> None:
        """Nothing more for ``key`` for ``seconds`` (the platform said so: a 429's retry-after)."""
        now = self.clock() if now is None else now
        bucket = self._refilled(key, now)
        bucket.held_until = max(bucket.held_until, now + seconds)

    def __len__(self) -> int:
        return len(self._buckets)
