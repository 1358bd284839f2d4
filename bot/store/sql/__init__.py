"""The SQL implementation of the store's ports: the engine (group-committed writes, write-through caches, SQLite
or PostgreSQL, migrations) and, in :mod:`bot.store.sql.repos`, one repository per concept.  Only the composition
root (``bot.gateway``, ``bot.cli``) builds them; every other module is typed on :mod:`bot.store.ports`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from bot.clock import SYSTEM_CLOCK, Clock
from bot.store.sql.store import SqlStore

if TYPE_CHECKING:
    from bot.config.settings import StoreSection

__all__ = ["SqlStore", "open_store", "store_from_settings"]


def open_store(url: str, *, synchronous: str = "FULL", busy_timeout_ms: int = 5000, **options: Any) -> SqlStore:
    """The store for a database URL (``sqlite:///path`` or ``postgresql://...``)."""
    return SqlStore(url, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, **options)


def store_from_settings(
    section: StoreSection,
    *,
    exclusive: bool = False,
    secrets: Iterable[str] = (),
    read_only: bool = False,
    shared: bool = False,
    commit_timer: Callable[[float], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> SqlStore:
    """The store configured by the ``store:`` section (every key, retention and caches included).

    ``exclusive``: the gateway's store (one process per SQLite file); read-only tools leave it False.
    """
    return SqlStore(
        section.database_url(),
        synchronous=section.synchronous,
        busy_timeout_ms=section.busy_timeout_ms,
        history_limit=section.history_limit,
        processed_ids_limit=section.processed_ids_limit,
        cache_chats=section.cache_chats,
        max_batch=section.max_batch,
        retention_interval_s=section.retention_interval_s,
        exclusive=exclusive,
        secrets=secrets,
        read_only=read_only,
        shared=shared,
        commit_timer=commit_timer,
        clock=clock,
    )
