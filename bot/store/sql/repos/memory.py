"""The memory tables: memories per person (full-text searched), linked accounts, one-time link codes,
chat summaries, agents' session keys and memory embeddings.

A person is an identity (``channel:user_id``) until it is linked; linking gives every account of the person
one new person id (``person:<id>``) and moves their memories to it, so unlinking an account leaves the
memories with the others. Every write goes through the store's writer, so the configured secrets are
redacted from memories as from every other row.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from bot.ids import new_code, new_id
from bot.store.chat_state import ChatState
from bot.store.fulltext import fts5_alternatives, fts5_query, grams, owner_token, tsquery
from bot.store.rows import timestamp
from bot.store.sql.cache import Lru
from bot.store.sql.ops import Step, steps_of
from bot.store.sql.store import SqlStore
from bot.store.values import Change, MemoryFull, MemoryHit, utcnow

__all__ = ["MemoryFull", "MemoryHit", "SqlMemoryStore"]

SEARCH = "search"
"""PostgreSQL's searched text: the stored ``tsvector`` column of migration 0008 (GIN-indexed)."""


SHARED_EMPTY_S = 30.0
"""With other processes writing (a scaled-out bot), how long "this account has no memories" is believed."""


class SqlMemoryStore:
    """The memory tables on the SQL store (SQLite FTS5 or PostgreSQL ``tsvector``).

    Most people have no memories, and :meth:`recall` runs before every turn: an account found to have none is
    remembered as such (bounded like the chat caches), so its turns read nothing. Every memory write of this
    process updates that at once; with other processes writing (``store.shared``) it is believed for
    :data:`SHARED_EMPTY_S` at most.  Without it every message reads the memory tables once (measured with
    ``bench/gateway.py``: see bench/README.md, "The store's caches").
    """

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self._empty: Lru[tuple[str, float]] = Lru(store.cache_chats)
        """Accounts without memories: their person and when that was read."""
        self._writes = 0
        """Memory writes so far: a read that a write overtook is not believed."""

    def _forget_empty(self, person: str | None = None) -> None:
        """A memory write: drop the accounts it may concern (``person``'s, or all)."""
        self._writes += 1
        self._empty.drop(lambda _identity, entry: person is None or entry[0] == person)

    # -- people ----------------------------------------------------------------------------

    async def person(self, identity: str) -> str:
        rows = await self.store.read("SELECT person FROM identities WHERE identity = ?", (identity,))
        return str(rows[0][0]) if rows else identity

    async def identities(self, person: str) -> list[str]:
        rows = await self.store.read("SELECT identity FROM identities WHERE person = ? ORDER BY identity", (person,))
        return [str(r[0]) for r in rows]

    async def issue_code(self, identity: str, minutes: float) -> str:
        """A one-time code that links the account redeeming it to ``identity``'s person (replaces older ones)."""
        code = new_code(8)
        now = self.store.clock.utcnow()
        await self.store.write(
            [
                Step("DELETE FROM link_codes WHERE identity = ? OR expires_at < ?", (identity, now)),
                Step(
                    "INSERT INTO link_codes (code, identity, expires_at) VALUES (?, ?, ?)",
                    (code, identity, now + timedelta(minutes=minutes)),
                ),
            ]
        )
        return code

    async def code_owner(self, code: str) -> str | None:
        rows = await self.store.read(
            "SELECT identity FROM link_codes WHERE code = ? AND expires_at > ?",
            (code.upper(), self.store.clock.utcnow()),
        )
        return str(rows[0][0]) if rows else None

    async def link(
        self, first: str, second: str, by: str, *, code: str | None = None, extra: Sequence[Change] = ()
    ) -> str | None:
        """Make ``second`` the same person as ``first`` (their memories merge); the person id, or None when
        ``code`` (which must still be valid, and is used up) was not. ``extra`` steps (an audit row) commit with it."""
        one, two = await self.person(first), await self.person(second)
        target = one if one.startswith("person:") else two if two.startswith("person:") else "person:" + new_id(12)
        now = self.store.clock.utcnow()
        steps: list[Step] = []
        if code is not None:
            steps.append(
                Step("DELETE FROM link_codes WHERE code = ? AND expires_at > ?", (code.upper(), now), guard=True)
            )
        for old in {one, two} - {target}:
            steps += [
                Step("UPDATE memories SET person = ? WHERE person = ?", (target, old)),
                Step("UPDATE memory_vectors SET person = ? WHERE person = ?", (target, old)),
                Step("UPDATE identities SET person = ? WHERE person = ?", (target, old)),
            ]
        for identity in dict.fromkeys((first, second)):
            steps += [
                Step("DELETE FROM identities WHERE identity = ?", (identity,)),
                Step(
                    "INSERT INTO identities (identity, person, linked_by, linked_at) VALUES (?, ?, ?, ?)",
                    (identity, target, by, now),
                ),
            ]
        result = await self.store.write([*steps, *steps_of(extra)])
        self._forget_empty()
        return target if result.ok else None

    async def unlink(self, identity: str) -> bool:
        """Detach ``identity`` from its person (it starts with no memories; the others keep theirs)."""
        result = await self.store.write([Step("DELETE FROM identities WHERE identity = ?", (identity,), guard=True)])
        self._forget_empty()
        return result.ok

    # -- memories --------------------------------------------------------------------------

    async def add(self, person: str, text: str, source: str, max_items: int) -> tuple[int, bool]:
        """Store ``text`` for ``person``: ``(id, True)``, or the id of the same text stored before and False.

        Raises :class:`MemoryFull` at ``max_items``. One statement, so two chats remembering at once
        cannot pass the limit or store the same text twice.
        """
        insert = Step(
            "INSERT INTO memories (person, text, grams, source, created_at) SELECT ?, ?, ?, ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM memories WHERE person = ? AND text = ?) "
            "AND (SELECT COUNT(*) FROM memories WHERE person = ?) < ? RETURNING id",
            (person, text, grams(text), source, utcnow(), person, text, person, max_items),
            returning=True,
        )
        result = await self.store.write([insert])
        self._forget_empty(person)
        if result.rows:
            return int(result.rows[0][0]), True
        same = await self.store.read("SELECT id FROM memories WHERE person = ? AND text = ?", (person, text))
        if same:
            return int(same[0][0]), False
        raise MemoryFull(person)

    async def count(self, person: str) -> int:
        rows = await self.store.read("SELECT COUNT(*) FROM memories WHERE person = ?", (person,))
        return int(rows[0][0])

    async def newest(self, person: str, limit: int, offset: int = 0) -> list[MemoryHit]:
        rows = await self.store.read(
            "SELECT id, text, created_at, source FROM memories WHERE person = ? ORDER BY id DESC LIMIT ? OFFSET ?",
            (person, limit, offset),
        )
        return [_hit(r) for r in rows]

    async def get(self, person: str, ids: Sequence[int]) -> list[MemoryHit]:
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        rows = await self.store.read(
            f"SELECT id, text, created_at, source FROM memories WHERE person = ? AND id IN ({marks})",
            (person, *ids),
        )
        return [_hit(r) for r in rows]

    def known_empty(self, identity: str) -> str | None:
        """The account's person when it is known to have no memories (most people): no query, and no terms to
        find for one."""
        known = self._empty.get(identity)
        if known is not None and (not self.store.shared or self.store.clock.monotonic() - known[1] < SHARED_EMPTY_S):
            return known[0]
        return None

    async def recall(self, identity: str, terms: list[str], limit: int) -> tuple[str, list[MemoryHit]]:
        """The account's person, and its memories matching ``terms`` (best first) followed by its newest ones,
        at most ``limit`` of each: one query (it runs before every turn)."""
        person = self.known_empty(identity)  # before any SQL is put together: most people have no memories
        if person is not None:
            return person, []
        me = "WITH me AS (SELECT COALESCE((SELECT person FROM identities WHERE identity = ?), ?) AS person) "
        newest = (
            "SELECT * FROM (SELECT 1 AS part, m.id, m.text, m.created_at, m.source, 0.0 AS score, me.person "
            "FROM memories m, me WHERE m.person = me.person ORDER BY m.id DESC LIMIT ?) AS newest"
        )
        person_row = " UNION ALL SELECT 2, 0, '', NULL, '', 0.0, me.person FROM me"  # the person, found or not
        params: tuple[object, ...]
        if not terms:
            sql = me + newest + person_row
            params = (identity, identity, limit)
        elif self.store.dialect == "sqlite":
            found = (
                "SELECT * FROM (SELECT 0 AS part, m.id, m.text, m.created_at, m.source, "
                "-bm25(memory_index, 0, 1, 1) AS score, me.person FROM memory_index "
                "JOIN memories m ON m.id = memory_index.rowid, me "
                "WHERE memory_index MATCH ('owner:p' || lower(hex(me.person)) || ' AND (' || ? || ')') "
                "ORDER BY score DESC LIMIT ?) AS found"
            )
            sql = me + found + " UNION ALL " + newest + person_row
            params = (identity, identity, fts5_alternatives(terms), limit, limit)
        else:
            found = (
                "SELECT * FROM (SELECT 0 AS part, m.id, m.text, m.created_at, m.source, "
                f"ts_rank(m.{SEARCH}, q)::float AS score, "
                "me.person FROM memories m, me, to_tsquery('english', ?) q "
                f"WHERE m.person = me.person AND m.{SEARCH} @@ q "
                "ORDER BY score DESC, m.id DESC LIMIT ?) AS found"
            )
            sql = me + found + " UNION ALL " + newest + person_row
            params = (identity, identity, tsquery(terms), limit, limit)
        read_at, writes = self.store.clock.monotonic(), self._writes
        rows = await self.store.read(sql, params)
        person = identity
        hits: dict[int, MemoryHit] = {}
        for part, memory_id, text, created, source, score, owner in rows:
            person = str(owner)
            if part != 2 and memory_id not in hits:
                hits[int(memory_id)] = _hit((memory_id, text, created, source), float(score))
        if hits:
            self._empty.pop(identity)
        elif writes == self._writes:
            self._empty.put(identity, (person, read_at))
        return person, list(hits.values())

    async def search(self, person: str, terms: list[str], limit: int) -> list[MemoryHit]:
        """The person's memories matching any of ``terms``, best first (BM25 / ``ts_rank``)."""
        if not terms:
            return []
        if self.store.dialect == "sqlite":
            rows = await self.store.read(
                "SELECT m.id, m.text, m.created_at, m.source, bm25(memory_index, 0, 1, 1) AS score "
                "FROM memory_index JOIN memories m ON m.id = memory_index.rowid "
                "WHERE memory_index MATCH ? ORDER BY score LIMIT ?",
                (fts5_query(owner_token(person), terms), limit),
            )
            return [_hit(r[:4], -float(r[4])) for r in rows]
        rows = await self.store.read(
            f"SELECT id, text, created_at, source, ts_rank({SEARCH}, q) AS score "
            f"FROM memories, to_tsquery('english', ?) q WHERE person = ? AND {SEARCH} @@ q "
            "ORDER BY score DESC, id DESC LIMIT ?",
            (tsquery(terms), person, limit),
        )
        return [_hit(r[:4], float(r[4])) for r in rows]

    async def delete(self, person: str, ids: Sequence[int] | None) -> int:
        """Delete the person's memories ``ids`` (None: all), with their index entries and vectors; how many."""
        params: tuple[object, ...]
        if ids is None:
            where, params = "person = ?", (person,)
        else:
            if not ids:
                return 0
            where = f"person = ? AND id IN ({', '.join('?' for _ in ids)})"
            params = (person, *ids)
        steps = [
            Step(f"DELETE FROM memory_vectors WHERE memory_id IN (SELECT id FROM memories WHERE {where})", params),
            Step(f"DELETE FROM memories WHERE {where}", params),
        ]
        if self.store.dialect == "sqlite":
            # FTS5 records a delete as a marker and keeps the words in its older segments until they merge: merge
            # them all now, so nothing of the deleted text lingers in the index (secure_delete zeroes the pages
            # the old segments leave).  The whole index is rewritten: milliseconds for thousands of memories.
            steps.append(Step("INSERT INTO memory_index (memory_index) VALUES ('optimize')"))
        result = await self.store.write(steps)
        self._forget_empty(person)
        return result.counts[1] if len(result.counts) > 1 else 0

    # -- embeddings ------------------------------------------------------------------------

    async def put_vector(self, memory_id: int, person: str, model: str, vector: Sequence[float]) -> None:
        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        await self.store.write(
            [
                Step("DELETE FROM memory_vectors WHERE memory_id = ?", (memory_id,)),
                Step(
                    "INSERT INTO memory_vectors (memory_id, person, model, vector) "
                    "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)",
                    (memory_id, person, model, packed, memory_id),
                ),
            ]
        )

    async def vectors(self, person: str, model: str) -> list[tuple[int, tuple[float, ...]]]:
        rows = await self.store.read(
            "SELECT memory_id, vector FROM memory_vectors WHERE person = ? AND model = ?", (person, model)
        )
        out = []
        for memory_id, packed in rows:
            raw = base64.b64decode(packed)
            out.append((int(memory_id), struct.unpack(f"<{len(raw) // 4}f", raw)))
        return out

    # -- chat summaries and session keys ---------------------------------------------------------

    async def summary(self, chat_key: str) -> tuple[str, int]:
        """The chat's running summary and the newest row it covers; kept with the chat's cached history (read
        once while this process owns the chat)."""
        state = await self.store.chat_state(chat_key)
        if state.summary is not None:
            return state.summary, state.summary_upto
        rows = await self.store.read("SELECT summary, upto_id FROM chat_summaries WHERE chat_key = ?", (chat_key,))
        summary, upto = (str(rows[0][0]), int(rows[0][1])) if rows else ("", 0)
        state.summarised(summary, upto)
        return summary, upto

    async def set_summary(self, chat_key: str, summary: str, upto_id: int) -> None:
        await self.store.write(
            [
                Step("DELETE FROM chat_summaries WHERE chat_key = ?", (chat_key,)),
                Step(
                    "INSERT INTO chat_summaries (chat_key, summary, upto_id, updated_at) VALUES (?, ?, ?, ?)",
                    (chat_key, summary, upto_id, utcnow()),
                ),
            ],
            on_commit=lambda _r: self.store.chats.history.committed(chat_key, _summary_is(summary, upto_id)),
        )

    async def session(self, chat_key: str, agent: str) -> dict[str, str]:
        rows = await self.store.read(
            "SELECT name, value FROM session_memory WHERE chat_key = ? AND agent = ? ORDER BY name", (chat_key, agent)
        )
        return {str(n): str(v) for n, v in rows}

    async def set_session(self, chat_key: str, agent: str, name: str, value: str, run_id: str) -> None:
        where = "chat_key = ? AND agent = ? AND name = ?"
        steps = [Step(f"DELETE FROM session_memory WHERE {where}", (chat_key, agent, name))]
        if value:
            steps.append(
                Step(
                    "INSERT INTO session_memory (chat_key, agent, name, value, run_id, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (chat_key, agent, name, value, run_id, utcnow()),
                )
            )
        await self.store.write(steps)

    async def forget_chat(self, chat_key: str) -> None:
        """What ``/reset`` deletes besides the history: the chat's summary and session keys."""
        await self.store.write(
            [
                Step("DELETE FROM chat_summaries WHERE chat_key = ?", (chat_key,)),
                Step("DELETE FROM session_memory WHERE chat_key = ?", (chat_key,)),
            ],
            on_commit=lambda _r: self.store.chats.history.committed(chat_key, _summary_is("", 0)),
        )


def _summary_is(summary: str, upto_id: int) -> Callable[[ChatState], None]:
    def apply(state: ChatState) -> None:
        state.summarised(summary, upto_id)

    return apply


def _hit(row: Sequence[Any], score: float = 0.0) -> MemoryHit:
    memory_id, text, created, source = row
    return MemoryHit(int(memory_id), str(text), timestamp(created) or utcnow(), str(source), score)
