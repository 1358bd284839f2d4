"""Forgetting forgets: a memory deleted with ``/memory forget`` (or the ``forget`` tool) also leaves everything
kept about the person's requests.

Deleting the ``memories`` row (and its index entry and vector) is not enough: the fact also sits in the trace of
the ``remember`` call that stored it, in ``recall`` results, in the chat's history and running summary, in a
paused run's checkpoint, in the tool ledger and in interrupt prompts. :func:`scrub` reads those rows in the
person's chats (the chats their accounts' runs were in, and the chats the facts were remembered in), replaces
each forgotten fact (any case, any spacing) by ``‹forgotten›``, drops the summary lines that state it (the summary
is rebuilt without them), and rewrites only the rows that changed, in one transaction. The chats' cached state is
dropped after, so the next turn reads what is stored now.

On SQLite, ``secure_delete`` (:mod:`bot.store.sqlite`) zeroes what deleted and rewritten rows leave on free pages
and the WAL is checkpointed into the database file and truncated, so the database file holds the fact nowhere.
PostgreSQL keeps old row versions until VACUUM reclaims them (see the README's memory section).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.memory.summary import without_facts
from bot.memory.text import STOPWORDS, WORD
from bot.store.ops import Step, to_json
from bot.store.sql import SqlStore
from bot.store.sqlite import truncate_wal

log = logging.getLogger(__name__)

FORGOTTEN = "‹forgotten›"


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


def _in(values: Sequence[str]) -> str:
    return ", ".join("?" for _ in values)


class Scrubber:
    """Rewrites the rows of some chats without some facts (one transaction; cached chat state dropped after)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def chats_of(self, identities: Iterable[str]) -> set[str]:
        """The chats the accounts ``identities`` (``channel:user_id``) ran requests in."""
        chats: set[str] = set()
        for identity in identities:
            channel, _, user = identity.partition(":")
            rows = await self.store.read(
                "SELECT DISTINCT chat_key FROM runs WHERE user_id = ? AND chat_key LIKE ?", (user, channel + ":%")
            )
            chats.update(str(r[0]) for r in rows)
        return chats

    async def scrub(self, chats: set[str], facts: Sequence[str]) -> Forgotten:
        """Remove ``facts`` from what is stored about the requests in ``chats``."""
        report = Forgotten(chats=len(chats))
        pattern = fact_pattern(facts)
        if pattern is None or not chats:
            return report
        keys = sorted(chats)
        hints = _hints(facts)
        steps: list[Step] = []
        steps += await self._json_rows(report, "trace_events", "seq", ["data"], keys, hints, pattern)
        steps += await self._json_rows(report, "session_messages", "id", ["data"], keys, hints, pattern)
        steps += await self._json_rows(report, "runs", "id", ["checkpoint"], keys, hints, pattern)
        steps += await self._json_rows(
            report, "interrupts", "id", ["prompt", "payload", "resolution"], keys, hints, pattern
        )
        steps += await self._ledger(report, keys, hints, pattern)
        steps += await self._session_keys(report, keys, pattern)
        steps += await self._summaries(report, keys, facts, pattern)
        if steps:
            await self.store.write(steps)
            self.store.forget_chats(lambda chat_key: chat_key in chats)
            report.wal_truncated = await self._truncate_wal()
        log.info(
            "memory: %d forgotten facts scrubbed from %d rows in %d chats (%s read)",
            len(facts),
            report.rows,
            len(chats),
            sum(report.scanned.values()),
        )
        return report

    def _filter(self, columns: Sequence[str], hints: list[str] | None) -> tuple[str, tuple[str, ...]]:
        if hints is None:
            return "", ()
        tests = [f"lower({c}) LIKE ?" for c in columns for _ in hints]
        return " AND (" + " OR ".join(tests) + ")", tuple(f"%{h}%" for _ in columns for h in hints)

    async def _json_rows(
        self,
        report: Forgotten,
        table: str,
        key: str,
        columns: list[str],
        chats: list[str],
        hints: list[str] | None,
        pattern: re.Pattern[str],
    ) -> list[Step]:
        where, params = self._filter(columns, hints)
        rows = await self.store.read(
            f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE chat_key IN ({_in(chats)}){where}",
            (*chats, *params),
        )
        report.scanned[table] = len(rows)
        steps = []
        for row_key, *values in rows:
            new = [
                _scrub_json(v, pattern) if c != "prompt" else _scrub_plain(v, pattern)
                for c, v in zip(columns, values, strict=True)
            ]
            if any(n is not None for n in new):
                sets = [(c, n) for c, n in zip(columns, new, strict=True) if n is not None]
                sql = f"UPDATE {table} SET {', '.join(f'{c} = ?' for c, _ in sets)} WHERE {key} = ?"
                steps.append(Step(sql, (*(n for _, n in sets), row_key)))
        report.changed[table] = len(steps)
        return steps

    async def _ledger(
        self, report: Forgotten, chats: list[str], hints: list[str] | None, pattern: re.Pattern[str]
    ) -> list[Step]:
        where, params = self._filter(["args", "result"], hints)
        rows = await self.store.read(
            "SELECT run_id, call_id, args, result FROM tool_ledger "
            f"WHERE run_id IN (SELECT id FROM runs WHERE chat_key IN ({_in(chats)})){where}",
            (*chats, *params),
        )
        report.scanned["tool_ledger"] = len(rows)
        steps = []
        for run_id, call_id, args, result in rows:
            new_args, new_result = _scrub_json(args, pattern), _scrub_json(result, pattern)
            if new_args is not None or new_result is not None:
                steps.append(
                    Step(
                        "UPDATE tool_ledger SET args = ?, result = ? WHERE run_id = ? AND call_id = ?",
                        (new_args or args, new_result or result, run_id, call_id),
                    )
                )
        report.changed["tool_ledger"] = len(steps)
        return steps

    async def _session_keys(self, report: Forgotten, chats: list[str], pattern: re.Pattern[str]) -> list[Step]:
        rows = await self.store.read(
            f"SELECT chat_key, agent, name, value FROM session_memory WHERE chat_key IN ({_in(chats)})", tuple(chats)
        )
        report.scanned["session_memory"] = len(rows)
        steps = []
        for chat_key, agent, name, value in rows:
            if (new := _scrub_plain(value, pattern)) is not None:
                steps.append(
                    Step(
                        "UPDATE session_memory SET value = ? WHERE chat_key = ? AND agent = ? AND name = ?",
                        (new, chat_key, agent, name),
                    )
                )
        report.changed["session_memory"] = len(steps)
        return steps

    async def _summaries(
        self, report: Forgotten, chats: list[str], facts: Sequence[str], pattern: re.Pattern[str]
    ) -> list[Step]:
        rows = await self.store.read(
            f"SELECT chat_key, summary FROM chat_summaries WHERE chat_key IN ({_in(chats)})", tuple(chats)
        )
        report.scanned["chat_summaries"] = len(rows)
        steps = []
        for chat_key, summary in rows:
            rebuilt = without_facts(str(summary), facts, pattern)
            if rebuilt != summary:
                steps.append(Step("UPDATE chat_summaries SET summary = ? WHERE chat_key = ?", (rebuilt, chat_key)))
        report.changed["chat_summaries"] = len(steps)
        return steps

    async def _truncate_wal(self) -> bool | None:
        if self.store.dialect != "sqlite":
            return None
        path = self.store.url.split(":///", 1)[1] if ":///" in self.store.url else ""
        if path in ("", ":memory:"):
            return None
        return await asyncio.to_thread(truncate_wal, path, self.store.busy_timeout_ms)
