"""The memory tables in memory (:class:`~bot.store.ports.MemoryRepo`): memories per person with a word search close to
the SQL one's, linked accounts, one-time link codes, vectors, chat summaries and session values; held to
:class:`~bot.store.sql.repos.memory.SqlMemoryStore` by ``tests/store/test_memory_contract.py``.

The search matches a term against a memory's words (lower-cased, with a crude stemmer standing in for Porter's:
``cats`` finds "cat", ``work`` finds "Works") and its CJK characters and pairs (:func:`bot.store.fulltext.grams`,
as the SQL store keeps them), and ranks by how many terms a memory has, the newest first among equals.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bot.ids import new_code, new_id
from bot.store.fulltext import CJK, grams
from bot.store.values import Change, MemoryFull, MemoryHit, utcnow

__all__ = ["FakeMemory", "stem"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s")


def stem(word: str) -> str:
    """``word`` lower-cased without a plural or verb ending (``called`` → ``call``, ``cats`` → ``cat``)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class _Memory:
    id: int
    person: str
    text: str
    source: str
    created_at: datetime
    words: frozenset[str]
    """The stemmed words and the CJK grams the search matches."""


def _words(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in _WORD.findall(CJK.sub(" ", text))) | frozenset(grams(text).split())


class FakeMemory:
    """:class:`~bot.store.ports.MemoryRepo` in a few dicts; ``clock`` gives naive UTC (as the store's clock)."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.clock = clock
        self.memories: dict[int, _Memory] = {}
        self.next_id = 1
        self.people: dict[str, str] = {}
        """Linked accounts: identity → person."""
        self.codes: dict[str, tuple[str, datetime]] = {}
        """Link codes: code → (identity, expires at)."""
        self.vector_rows: dict[int, tuple[str, str, tuple[float, ...]]] = {}
        """memory id → (person, model, vector)."""
        self.summaries: dict[str, tuple[str, int]] = {}
        self.sessions: dict[tuple[str, str], dict[str, str]] = {}
        self.committed: list[Change] = []
        """The changes committed with a link (an audit row)."""

    # -- people ----------------------------------------------------------------------------

    async def person(self, identity: str) -> str:
        return self.people.get(identity, identity)

    async def identities(self, person: str) -> list[str]:
        return sorted(i for i, p in self.people.items() if p == person)

    async def issue_code(self, identity: str, minutes: float) -> str:
        now = self.clock()
        self.codes = {c: (i, at) for c, (i, at) in self.codes.items() if i != identity and at >= now}
        code = new_code(8)
        self.codes[code] = (identity, now + timedelta(minutes=minutes))
        return code

    async def code_owner(self, code: str) -> str | None:
        held = self.codes.get(code.upper())
        return held[0] if held is not None and held[1] > self.clock() else None

    async def link(
        self, first: str, second: str, by: str, *, code: str | None = None, extra: Sequence[Change] = ()
    ) -> str | None:
        if code is not None:
            if await self.code_owner(code) is None:
                return None
            del self.codes[code.upper()]
        one, two = await self.person(first), await self.person(second)
        target = one if one.startswith("person:") else two if two.startswith("person:") else "person:" + new_id(12)
        for old in {one, two} - {target}:
            self.memories = {i: replace(m, person=target) if m.person == old else m for i, m in self.memories.items()}
            self.vector_rows = {i: (target if p == old else p, m, v) for i, (p, m, v) in self.vector_rows.items()}
            self.people = {i: target if p == old else p for i, p in self.people.items()}
        self.people[first] = self.people[second] = target
        self.committed.extend(extra)
        return target

    async def unlink(self, identity: str) -> bool:
        return self.people.pop(identity, None) is not None

    # -- memories --------------------------------------------------------------------------

    def _of(self, person: str) -> list[_Memory]:
        return [m for m in self.memories.values() if m.person == person]

    async def add(self, person: str, text: str, source: str, max_items: int) -> tuple[int, bool]:
        mine = self._of(person)
        same = next((m for m in mine if m.text == text), None)
        if same is not None:
            return same.id, False
        if len(mine) >= max_items:
            raise MemoryFull(person)
        memory = _Memory(self.next_id, person, text, source, utcnow(), _words(text))
        self.memories[memory.id] = memory
        self.next_id += 1
        return memory.id, True

    async def count(self, person: str) -> int:
        return len(self._of(person))

    async def newest(self, person: str, limit: int, offset: int = 0) -> list[MemoryHit]:
        mine = sorted(self._of(person), key=lambda m: m.id, reverse=True)
        return [_hit(m) for m in mine[offset : offset + limit]]

    async def get(self, person: str, ids: Sequence[int]) -> list[MemoryHit]:
        return [_hit(m) for m in self._of(person) if m.id in ids]

    def known_empty(self, identity: str) -> str | None:
        person = self.people.get(identity, identity)
        return None if self._of(person) else person

    async def recall(self, identity: str, terms: list[str], limit: int) -> tuple[str, list[MemoryHit]]:
        person = await self.person(identity)
        hits = {h.id: h for h in await self.search(person, terms, limit)}
        for hit in await self.newest(person, limit):
            hits.setdefault(hit.id, hit)
        return person, list(hits.values())

    async def search(self, person: str, terms: list[str], limit: int) -> list[MemoryHit]:
        wanted = {stem(t) for t in terms} | set(terms)
        scored = [(len(wanted & m.words), m) for m in self._of(person)]
        found = sorted(((s, m) for s, m in scored if s), key=lambda sm: (-sm[0], -sm[1].id))
        return [_hit(m, float(s)) for s, m in found[:limit]]

    async def delete(self, person: str, ids: Sequence[int] | None) -> int:
        gone = [m.id for m in self._of(person) if ids is None or m.id in ids]
        for memory_id in gone:
            del self.memories[memory_id]
            self.vector_rows.pop(memory_id, None)
        return len(gone)

    # -- embeddings ------------------------------------------------------------------------

    async def put_vector(self, memory_id: int, person: str, model: str, vector: Sequence[float]) -> None:
        self.vector_rows.pop(memory_id, None)
        if memory_id in self.memories:  # stored as float32, as the SQL store packs it
            packed = struct.pack(f"<{len(vector)}f", *vector)
            self.vector_rows[memory_id] = (person, model, struct.unpack(f"<{len(vector)}f", packed))

    async def vectors(self, person: str, model: str) -> list[tuple[int, tuple[float, ...]]]:
        return [(i, v) for i, (p, m, v) in self.vector_rows.items() if (p, m) == (person, model)]

    # -- chat summaries and session keys ---------------------------------------------------------

    async def summary(self, chat_key: str) -> tuple[str, int]:
        return self.summaries.get(chat_key, ("", 0))

    async def set_summary(self, chat_key: str, summary: str, upto_id: int) -> None:
        self.summaries[chat_key] = (summary, upto_id)

    async def session(self, chat_key: str, agent: str) -> dict[str, str]:
        return dict(sorted(self.sessions.get((chat_key, agent), {}).items()))

    async def set_session(self, chat_key: str, agent: str, name: str, value: str, run_id: str) -> None:
        values = self.sessions.setdefault((chat_key, agent), {})
        if value:
            values[name] = value
        else:
            values.pop(name, None)

    async def forget_chat(self, chat_key: str) -> None:
        self.summaries.pop(chat_key, None)
        self.sessions = {k: v for k, v in self.sessions.items() if k[0] != chat_key}


def _hit(memory: _Memory, score: float = 0.0) -> MemoryHit:
    return MemoryHit(memory.id, memory.text, memory.created_at, memory.source, score)
