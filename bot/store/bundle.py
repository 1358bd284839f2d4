"""The chat store as the scaled-out parts use it (:class:`PartitionedStore`: fencing, the chats' caches, settings
announced to the other processes); :mod:`bot.store.ports` re-exports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["PartitionedStore", "SettingsAnnounce"]


class SettingsAnnounce(Protocol):
    """The settings cache as processes share it: this one's changes announced, the others' applied."""

    published: Callable[[str], None] | None
    """Told each settings key this process changed (the bus carries it to the others)."""

    def changed(self, key: str | None) -> None:
        """Another process changed ``key`` (None: anything may have changed): drop the cached copy."""


class PartitionedStore(Protocol):
    """The chat store as the scaled-out parts use it (:class:`~bot.store.sql.store.SqlStore`)."""

    @property
    def settings(self) -> SettingsAnnounce: ...

    async def raise_fence(self, partition: int, owner: str) -> int:
        """A new fencing token for ``partition``, from now on the only one its writes may carry."""

    def forget_chats(self, which: Callable[[str], bool]) -> None:
        """Drop what is cached of the chats ``which`` selects (their partition moved)."""

    async def flush(self) -> None:
        """Every write submitted so far is committed."""
