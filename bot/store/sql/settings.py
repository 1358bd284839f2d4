"""Chat and global settings, cached per settings key.

One process: write-through (every committed change is applied to the cached copy), so the per-message path
reads no database.  Processes sharing a database (a scaled-out bot): any of them may change a key, so a change
is also announced (``published``, the bus carries it to the others, which :meth:`SettingsCache.changed` the key)
and every copy is read again after ``ttl_s`` at the latest, in case an announcement was missed.  Before this, a
worker read the settings from PostgreSQL for every message, a large share of its time in ``bench/scaleout.py``
(measured: see bench/README.md, "The store's caches").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.clock import Clock
from bot.store.sql.cache import CachedMap


class SettingsCache:
    def __init__(self, cached: CachedMap[dict[str, Any]], clock: Clock, *, shared: bool, ttl_s: float = 30.0) -> None:
        self.cached = cached
        self.clock = clock
        self.shared = shared
        self.ttl_s = ttl_s
        self.published: Callable[[str], None] | None = None
        """Told each settings key whose change committed here (scaled out: announced to the other processes)."""
        self._loaded: dict[str, float] = {}

    def loaded(self, key: str) -> None:
        """``key`` was read from the database just now."""
        if self.shared:
            if len(self._loaded) > 2 * self.cached.lru.capacity:  # forget the times of keys the cache let go
                self._loaded = {k: t for k, t in self._loaded.items() if k in self.cached.lru}
            self._loaded[key] = self.clock.monotonic()

    async def view(self, key: str) -> Mapping[str, Any]:
        """The cached settings themselves (no copy): a hit costs no await."""
        if self.shared:
            at = self._loaded.get(key)
            if at is None or self.clock.monotonic() - at > self.ttl_s:
                self.cached.lru.pop(key)  # read again: another process may have changed it unannounced
                return await self.cached.get(key)
        hit = self.cached.lru.get(key)
        return hit if hit is not None else await self.cached.get(key)

    def committed(self, key: str, apply: Callable[[dict[str, Any]], None]) -> None:
        """A change of ``key`` committed here."""
        self.cached.committed(key, apply)
        if self.published is not None:
            self.published(key)

    def changed(self, key: str | None) -> None:
        """Another process changed ``key`` (None: maybe any key, e.g. announcements were missed)."""
        self.cached.drop(lambda k: key is None or k == key)
