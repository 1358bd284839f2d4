"""Forgetting forgets: a memory deleted with ``/memory forget`` (or the ``forget`` tool) also leaves everything
kept about the person's requests.

Deleting the ``memories`` row (and its index entry and vector) is not enough: the fact also sits in the trace of
the ``remember`` call that stored it, in ``recall`` results, in the chat's history and running summary, in a
paused run's checkpoint, in the tool ledger and in interrupt prompts. :func:`scrub` reads those rows in the
person's chats (the chats their accounts' runs were in, and the chats the facts were remembered in), replaces
each forgotten fact (any case, any spacing) by ``‹forgotten›``, drops the summary lines that state it (the summary
is rebuilt without them), and rewrites only the rows that changed, in one transaction. The chats' cached state is
dropped after, so the next turn reads what is stored now.

On SQLite, ``secure_delete`` (:mod:`bot.store.sql.sqlite`) zeroes what deleted and rewritten rows leave on free pages
and the WAL is checkpointed into the database file and truncated, so the database file holds the fact nowhere.
PostgreSQL keeps old row versions until VACUUM reclaims them (see docs/agents/memory.md).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.memory.summary import without_facts
from bot.memory.text import STOPWORDS, WORD
from bot.store.ports import ScrubRepo
from bot.store.values import Rewrite, to_json

log = logging.getLogger(__name__)

FORGOTTEN = "‹forgotten›"
PLAIN = frozenset({"prompt", "value"})
"""Columns of plain text (the others hold JSON)."""


@dataclass
class Forgotten:
    """What a forget touched (for the reply, the log and the tests)."""

    memories: int = 0
    chats: int = 0
    scanned: dict[str, int] = field(default_factory=dict)
    """Rows read per table (those that could mention a fact)."""
    changed: dict[str, int] = field(default_factory=dict)
    """Rows rewritten per table."""
    wal_truncated: bool | None = None
    """SQLite: the WAL was copied into the database file and emptied (None: not SQLite, or nothing changed)."""

    @property
    def rows(self) -> int:
        return sum(self.changed.values())


def _core(words: list[str]) -> list[str]:
    """The fact without the stop words it starts and ends with ("My favourite tea is genmaicha" → "favourite tea
    is genmaicha"): an answer that says it back ("your favourite tea is genmaicha") is found too."""
    start, end = 0, len(words)
    while start < end and words[start].lower().strip(".,!?;:") in STOPWORDS:
        start += 1
    while end > start and words[end - 1].lower().strip(".,!?;:") in STOPWORDS:
        end -= 1
    return words[start:end]


def fact_pattern(facts: Iterable[str]) -> re.Pattern[str] | None:
    """Any of ``facts`` (or its core, when that is two words or more), in any case and with any spacing between
    its words (longest first)."""
    variants = set()
    for fact in facts:
        words = fact.split()
        if words:
            variants.add(tuple(words))
        core = _core(words)
        if len(core) >= 2:
            variants.add(tuple(core))
    parts = sorted((r"\s+".join(re.escape(w) for w in v) for v in variants), key=len, reverse=True)
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def _scrubbed(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(FORGOTTEN, value) if pattern.search(value) else value
    if isinstance(value, dict):
        return {k: _scrubbed(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, pattern) for v in value]
    return value


def _scrub_json(text: str | None, pattern: re.Pattern[str]) -> str | None:
    """JSON ``text`` without the facts (None when nothing in it changes)."""
    if not text or (not pattern.search(text) and "\\" not in text):
        return None  # (with a backslash, the fact may be there escaped: the row is read to be sure)
    try:
        data = json.loads(text)
    except ValueError:
        return _scrub_plain(text, pattern)
    scrubbed = _scrubbed(data, pattern)
    return None if scrubbed == data else to_json(scrubbed)


def _scrub_plain(text: str | None, pattern: re.Pattern[str]) -> str | None:
    if not text or not pattern.search(text):
        return None
    return pattern.sub(FORGOTTEN, text)


def _hints(facts: Sequence[str]) -> list[str] | None:
    """A word of each fact for a ``LIKE`` pre-filter (its longest: the rarest, most likely), lower-cased; None when
    a fact has no word that SQLite's ``lower()`` handles (non-ASCII letters with case): then every row is read."""
    hints = []
    for fact in facts:
        words = [w for w in WORD.findall(fact) if w.isascii() or w.lower() == w.upper()]
        if not words:
            return None
        hints.append(max(words, key=len).lower())
    return sorted(set(hints))


class Scrubber:
    """Rewrites the rows of some chats without some facts (one transaction; cached chat state dropped after)."""

    def __init__(self, rows: ScrubRepo) -> None:
        self.rows = rows

    async def chats_of(self, identities: Iterable[str]) -> set[str]:
        """The chats the accounts ``identities`` (``channel:user_id``) ran requests in."""
        return await self.rows.chats_of(identities)

    async def scrub(self, chats: set[str], facts: Sequence[str]) -> Forgotten:
        """Remove ``facts`` from what is stored about the requests in ``chats``."""
        report = Forgotten(chats=len(chats))
        pattern = fact_pattern(facts)
        if pattern is None or not chats:
            return report
        keys = sorted(chats)
        hints = _hints(facts)
        rewrites: list[Rewrite] = []
        for place in ("trace_events", "session_messages", "runs", "interrupts", "tool_ledger"):
            rewrites += await self._place(report, place, keys, hints, pattern)
        rewrites += await self._place(report, "session_memory", keys, None, pattern)
        rewrites += await self._summaries(report, keys, facts, pattern)
        if rewrites:
            report.wal_truncated = await self.rows.rewrite(rewrites, lambda chat_key: chat_key in chats)
        log.info(
            "memory: %d forgotten facts scrubbed from %d rows in %d chats (%s read)",
            len(facts),
            report.rows,
            len(chats),
            sum(report.scanned.values()),
        )
        return report

    async def _place(
        self, report: Forgotten, place: str, chats: list[str], hints: list[str] | None, pattern: re.Pattern[str]
    ) -> list[Rewrite]:
        columns = self.rows.places[place]
        rows = await self.rows.rows(place, chats, hints)
        report.scanned[place] = len(rows)
        rewrites = []
        for key, values in rows:
            new = {
                c: n
                for c, v in zip(columns, values, strict=True)
                if (n := _scrub_plain(v, pattern) if c in PLAIN else _scrub_json(v, pattern)) is not None
            }
            if new:
                rewrites.append(Rewrite(place, key, new))
        report.changed[place] = len(rewrites)
        return rewrites

    async def _summaries(
        self, report: Forgotten, chats: list[str], facts: Sequence[str], pattern: re.Pattern[str]
    ) -> list[Rewrite]:
        rows = await self.rows.rows("chat_summaries", chats, None)
        report.scanned["chat_summaries"] = len(rows)
        rewrites = []
        for key, (summary,) in rows:
            rebuilt = without_facts(str(summary), facts, pattern)
            if rebuilt != summary:
                rewrites.append(Rewrite("chat_summaries", key, {"summary": rebuilt}))
        report.changed["chat_summaries"] = len(rewrites)
        return rewrites
