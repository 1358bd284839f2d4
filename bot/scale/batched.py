"""Redis commands for things that finish at any moment, sent together: one pipeline per round trip.

The first item goes at once; what finishes while that pipeline is on its way goes with the next one.  So a quiet
bus adds no delay, and a busy one sends one round trip for many acknowledgements instead of one each (a
loopback round trip costs each process tens of microseconds of kernel time).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Batched(Generic[T]):
    def __init__(self, redis: Any, add: Callable[[Any, T], None], what: str) -> None:
        """``add(pipeline, item)``: queue an item's commands; ``what``: for the log when a pipeline fails."""
        self.redis = redis
        self.add = add
        self.what = what
        self._items: list[T] = []
        self._sending: asyncio.Future[None] | None = None

    def push(self, item: T) -> None:
        self._items.append(item)
        if self._sending is None or self._sending.done():
            self._sending = asyncio.ensure_future(self._send())

    async def flushed(self) -> None:
        """Until everything pushed so far was sent (or failed, logged)."""
        while self._sending is not None and not self._sending.done():
            await asyncio.shield(self._sending)

    async def _send(self) -> None:
        while self._items:
            batch, self._items = self._items, []
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for item in batch:
                        self.add(pipe, item)
                    await pipe.execute()
            except Exception as exc:
                log.warning("bus: could not send %d %s: %s", len(batch), self.what, exc)
