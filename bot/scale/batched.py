"""Redis commands for things that finish at any moment, sent together: one pipeline per round trip.

The first item goes at once; what arrives while that pipeline is on its way goes with the next one.  So a quiet
bus adds no delay, and a busy one sends one round trip for many items instead of one each: a round trip of its
own (a pooled connection, a loopback send and a read) costs a process several times the CPU of one item of a
pipeline (see bench/README.md, "Redis").  Items go in the order they were pushed, one pipeline at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Batched(Generic[T]):
    def __init__(
        self,
        redis: Any,
        add: Callable[[Any, T], None],
        what: str,
        finish: Callable[[Any, list[T]], None] | None = None,
        *,
        transaction: bool = False,
    ) -> None:
        """``add(pipeline, item)``: queue an item's commands; ``what``: for the log when a pipeline fails;
        ``finish(pipeline, items)``: commands for all the items of a pipeline, after theirs (their replies go to
        nobody; a refused one is logged); ``transaction``: each pipeline in ``MULTI``/``EXEC``, so that its
        commands take effect together or not at all (a process killed mid-write leaves none of them)."""
        self.redis = redis
        self.add = add
        self.what = what
        self.finish = finish
        self.transaction = transaction
        self._items: list[tuple[T, asyncio.Future[list[Any]] | None]] = []
        self._sending: asyncio.Future[None] | None = None

    def push(self, item: T) -> None:
        """Send ``item`` with the next pipeline, without waiting (a failure is logged)."""
        self._queue(item, None)

    async def call(self, item: T) -> list[Any]:
        """Send ``item`` with the next pipeline; the replies of its commands (what Redis refused raises, as does
        a pipeline that did not go through)."""
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._queue(item, future)
        return await future

    def _queue(self, item: T, future: asyncio.Future[list[Any]] | None) -> None:
        self._items.append((item, future))
        if self._sending is None or self._sending.done():
            self._sending = asyncio.ensure_future(self._send())

    async def flushed(self) -> None:
        """Until everything pushed so far was sent (or failed, logged)."""
        while self._sending is not None and not self._sending.done():
            await asyncio.shield(self._sending)

    async def _send(self) -> None:
        while self._items:
            batch, self._items = self._items, []
            spans = []
            try:
                async with self.redis.pipeline(transaction=self.transaction) as pipe:
                    for item, _ in batch:
                        start = len(pipe)
                        self.add(pipe, item)
                        spans.append((start, len(pipe)))
                    if self.finish is not None:
                        self.finish(pipe, [item for item, _ in batch])
                    replies = await pipe.execute(raise_on_error=False)
            except Exception as exc:
                if any(future is None for _, future in batch):
                    log.warning("bus: could not send %d %s: %s", len(batch), self.what, exc)
                for _, future in batch:
                    if future is not None and not future.done():
                        future.set_exception(exc)
                continue
            failed = 0
            for (_, future), (start, end) in zip(batch, spans, strict=True):
                mine = replies[start:end]
                error = next((r for r in mine if isinstance(r, Exception)), None)
                if future is None:
                    failed += error is not None
                elif future.done():
                    continue  # its caller gave up waiting; the commands went all the same
                elif error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(mine)
            if failed:
                log.warning("bus: Redis refused %d of %d %s", failed, len(batch), self.what)
            extra = replies[spans[-1][1] if spans else 0 :]
            if any(isinstance(r, Exception) for r in extra):
                log.warning("bus: Redis refused a command for %d %s: %s", len(batch), self.what, extra)
