"""Retention: what the writer prunes, and when.

Pruning is not done per message.  The writer notes which chats gained history
rows and how many processed ids were added; every ``interval_s`` (or when asked
through ``Store.prune``) it runs one pass in its own transaction:

- each chat that grew keeps its newest ``history_limit`` rows;
- the ``inbox`` keeps its newest ``processed_ids_limit`` handled ids (pending events stay);
- every registered rule adds its own statements (traces, later).

All of this runs on the writer (for SQLite, the writer thread), never
concurrently with a batch, so this object needs no locking.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from bot.clock import SYSTEM_CLOCK
from bot.store.sql.ops import PRUNE_EVENTS, PRUNE_HISTORY, Step, Write, WriteResult

log = logging.getLogger(__name__)

RetentionRule = Callable[[], Sequence[Step]]
"""Returns the statements of one pruning pass (e.g. delete traces older than a week).

Called on the writer, possibly in its thread: it must not touch the event loop."""

Done = Callable[[WriteResult | None], None]


class Retention:
    """The limits, the bookkeeping of what grew, and the plan of the next pass."""

    def __init__(
        self,
        *,
        history_limit: int,
        processed_ids_limit: int,
        interval_s: float = 5.0,
        max_chats_per_pass: int = 1000,
        clock: Callable[[], float] = SYSTEM_CLOCK.monotonic,
    ) -> None:
        self.history_limit = history_limit
        self.processed_ids_limit = processed_ids_limit
        self.interval_s = interval_s
        self.max_chats_per_pass = max_chats_per_pass
        self.rules: list[RetentionRule] = []
        self.event_count: int | None = None
        """An upper bound of the rows in ``inbox`` (counted at start, then every write that may add one)."""
        self.passes = 0
        self._clock = clock
        self._last = clock()
        self._chats: dict[str, None] = {}  # an ordered set: oldest growth pruned first
        self._events = 0

    def note(self, write: Write, result: WriteResult) -> None:
        if not result.ok:
            return
        if write.grows is not None:
            self._chats[write.grows] = None
        self._events += write.events

    def grew(self) -> bool:
        """Whether writes since the last pass left something to cut (an idle gateway prunes only then)."""
        return bool(self._chats or self._events)

    def due(self) -> bool:
        if self._clock() - self._last < self.interval_s:
            return False
        return bool(self._chats or self._events or self.rules)

    def plan(self) -> tuple[list[Step], Done]:
        """The statements of one pass and the callback that books its outcome."""
        self._last = self._clock()
        chats = list(self._chats)[: self.max_chats_per_pass]
        for chat in chats:
            del self._chats[chat]
        steps = [Step(PRUNE_HISTORY, (chat, chat, self.history_limit)) for chat in chats]
        added = self._events
        expected = None if self.event_count is None else self.event_count + added
        excess = 0 if expected is None else expected - self.processed_ids_limit
        if excess > 0:
            steps.append(Step(PRUNE_EVENTS, (self.processed_ids_limit,)))
        for rule in self.rules:
            try:
                steps.extend(rule())
            except Exception:
                log.exception("retention rule %r failed; skipped this pass", rule)

        def done(result: WriteResult | None) -> None:
            if result is None:
                # The pass failed: try these chats again next time.
                for chat in chats:
                    self._chats[chat] = None
                return
            self.passes += 1
            self._events -= added
            if expected is not None:
                # At most the limit's worth of handled ids are left (and a few pending events).
                self.event_count = min(expected, self.processed_ids_limit)

        return steps, done
