"""Fencing: what a worker does for a partition counts only while it holds the partition's lease.

A lease in Redis can lapse while its holder still runs (a stalled process, a loaded machine); the next owner
then takes the partition over.  Each owner raises the partition's **fencing token** (a row in the database)
before it handles anything there, and every write done for the partition's work carries the token it was
handed with the lease: the store checks it in the same transaction, so a write by a worker that lost the lease
is refused, whatever Redis said.  Sends that follow no commit (typing, streaming previews, notices) check the
worker's own belief that the lease is still held (``Fence.alive``) first.

The work runs inside :func:`fenced`; the store and the delivery read :func:`current`.  A refused write or send
raises :class:`LeaseLost`, a ``BaseException`` like :class:`asyncio.CancelledError`: no handler meant for a run's
errors catches it (none of them may report anything: the new owner answers), and the consumer ends the work
without acknowledging it, as if the worker had died at that point.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


class LeaseLost(BaseException):
    """The partition's lease is no longer this worker's: stop the work, commit and send nothing more."""


@dataclass(frozen=True, slots=True)
class Fence:
    """The partition an event belongs to, the token its lease came with, and whether the lease is still held."""

    partition: int
    token: int
    alive: Callable[[], bool] = lambda: True


_CURRENT: ContextVar[Fence | None] = ContextVar("fence", default=None)


@contextmanager
def fenced(fence: Fence | None) -> Iterator[None]:
    """Run the block (and the tasks it starts) as work of ``fence``'s partition (None: not fenced)."""
    reset = _CURRENT.set(fence)
    try:
        yield
    finally:
        _CURRENT.reset(reset)


def current() -> Fence | None:
    """The fence of the work running now (None outside a partition's work, as in one process)."""
    return _CURRENT.get()


def check(what: str) -> Fence | None:
    """The current fence, after making sure its lease is believed held; :class:`LeaseLost` if not."""
    fence = _CURRENT.get()
    if fence is not None and not fence.alive():
        raise LeaseLost(f"partition {fence.partition}: the lease was lost; {what} is not done")
    return fence


class Fences:
    """The partitions this process holds, with their tokens and how long their leases are believed held.

    Made by the composition root and shared: the partition consumer keeps it up to date; whatever acts for a chat
    outside the consumer's handling (an expiry timer, a scheduled message, recovery) runs in :meth:`fence_for`
    of the chat.  Without partitions (one process) every chat is unfenced.
    """

    def __init__(self, partitions: int | None = None, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.partitions = partitions
        self._monotonic = monotonic
        self._held: dict[int, tuple[int, float]] = {}
        """partition → (token, monotonic time until which the lease is believed held)."""

    def partition_of(self, chat_key: str) -> int:
        assert self.partitions is not None
        return zlib.crc32(chat_key.encode()) % self.partitions

    def hold(self, partition: int, token: int, until: float) -> None:
        self._held[partition] = (token, until)

    def renewed(self, partition: int, until: float) -> None:
        held = self._held.get(partition)
        if held is not None:
            self._held[partition] = (held[0], max(held[1], until))

    def drop(self, partition: int) -> None:
        self._held.pop(partition, None)

    def token(self, partition: int) -> int | None:
        held = self._held.get(partition)
        return None if held is None else held[0]

    def alive(self, partition: int, token: int) -> bool:
        """Whether ``partition`` is held with ``token`` and its lease has not run out since the last renewal."""
        held = self._held.get(partition)
        return held is not None and held[0] == token and self._monotonic() < held[1]

    def fence(self, partition: int) -> Fence:
        """The fence of work for ``partition`` starting now (a dead one when the partition is not held here)."""
        token = self.token(partition)
        if token is None:
            return Fence(partition, -1, lambda: False)
        return Fence(partition, token, lambda: self.alive(partition, token))

    def fence_for(self, chat_key: str) -> Fence | None:
        """The fence of work for ``chat_key`` (None: one process, nothing to fence)."""
        if self.partitions is None:
            return None
        return self.fence(self.partition_of(chat_key))


NO_FENCES = Fences()
"""One process: nothing is fenced."""
