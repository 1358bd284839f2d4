"""Futures resolved by the commit that marks an inbound event handled, for whoever waits on one (the web console).

The console submits an answer through the inbox like any press, then awaits :meth:`HandledEvents.wait`: the
supervisor (and the interrupt service, for a resolution it commits) calls :meth:`HandledEvents.handled` right
after that commit, so the console reads the outcome once instead of polling the database.  Only events handled
in this process can be awaited (the single-process gateway); nothing is kept for keys nobody waits on.
"""

from __future__ import annotations

import asyncio


class HandledEvents:
    """Who waits for which event's handling commit."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def expect(self, key: str) -> asyncio.Future[None]:
        """A future done once the event ``key`` was handled; call before the event is submitted."""
        future = self._waiting.get(key)
        if future is None:
            future = self._waiting[key] = asyncio.get_running_loop().create_future()
        return future

    async def wait(self, future: asyncio.Future[None], key: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``future`` (from :meth:`expect`); whether the event was handled."""
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            if self._waiting.get(key) is future:
                del self._waiting[key]

    def forget(self, key: str) -> None:
        """Nobody waits for ``key`` any more (it was not submitted after all)."""
        self._waiting.pop(key, None)

    def handled(self, key: str) -> None:
        """The commit marking ``key`` handled is done (or its handling ended without one)."""
        if not self._waiting:
            return
        future = self._waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(None)
