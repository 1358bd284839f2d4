"""What the writer executes: portable SQL steps, grouped into writes.

A :class:`Step` is one statement with ``?`` placeholders that runs unchanged
on SQLite and (with ``?`` numbered to ``$n``) on PostgreSQL; table names come
from the SQLModel schema.  A :class:`Write` is the steps of one logical change
(accept a message, append a reply, set a setting); the writer commits many
writes in one transaction and hands each its :class:`WriteResult`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from itertools import chain
from typing import Any

from bot.store.values import utcnow


@dataclass(frozen=True, slots=True, init=False)
class Step:
    """One SQL statement of a write.

    ``guard``: when the statement changes no row, the write stops there and its
    result is ``ok=False`` (an event seen before; later, an interrupt that is no
    longer pending).  Put guards first, so a stopped write changed nothing.
    ``returning``: the statement ends with ``RETURNING``; its rows are handed back.
    ``fence``: a guard that checks a partition's fencing token (:mod:`bot.fencing`); when it stops the write,
    the result says ``fenced``.
    ``many``: ``params`` is a tuple of parameter tuples and the statement runs once for each (``executemany``:
    one prepared statement, no Python between rows; about half the cost per row of a multi-row ``VALUES`` on
    SQLite); never a guard nor ``returning``; its count is the rows changed by all.  Only the SQLite writer
    runs it (:attr:`SqlStore.many_rows <bot.store.sql.store.SqlStore.many_rows>` says when a repository may use it).
    """

    sql: str
    params: tuple[Any, ...] = ()
    guard: bool = False
    returning: bool = False
    fence: bool = False
    many: bool = False

    def __init__(
        self,
        sql: str,
        params: tuple[Any, ...] = (),
        guard: bool = False,
        returning: bool = False,
        fence: bool = False,
        many: bool = False,
    ) -> None:
        # Through the slots' own setters: the generated ``__init__`` of a frozen dataclass calls
        # ``object.__setattr__`` for each field, more than twice the cost (a message makes eight steps; measured: see
        # bench/README.md, "Per-message micro-optimisations").
        _set_sql(self, sql)
        _set_params(self, params)
        _set_guard(self, guard)
        _set_returning(self, returning)
        _set_fence(self, fence)
        _set_many(self, many)


_set_sql, _set_params, _set_guard, _set_returning, _set_fence, _set_many = (
    vars(Step)[name].__set__ for name in ("sql", "params", "guard", "returning", "fence", "many")
)


@dataclass(slots=True)
class WriteResult:
    """The outcome of one committed write."""

    ok: bool = True
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    """Rows changed (or returned) by each executed step."""
    fenced: bool = False
    """Stopped by a fencing token that is no longer current: the partition has another owner."""


OnCommit = Callable[[WriteResult], None]


@dataclass(slots=True, eq=False)
class Write:
    """A queued write: its steps, its waiter and what happens after the commit.

    ``on_commit`` runs on the event loop after the commit and before the waiter
    wakes (the write-through caches use it).  ``grows`` names the chat whose
    history gained rows and ``events`` counts processed ids added, for retention.
    ``prune`` asks the writer for a retention pass; the waiter wakes after it.
    """

    steps: Sequence[Step]
    future: asyncio.Future[WriteResult] | None
    """None for a write nobody waits on (its failure is logged, naming ``what``)."""
    on_commit: OnCommit | None = None
    grows: str | None = None
    events: int = 0
    prune: bool = False
    what: str = ""
    first: bool = False
    """Queued ahead of the rest, and committed in a small batch of its own (see ``SqlStore.write_later``)."""
    receipt: asyncio.Future[WriteResult] | None = None
    """A held inbound event's own waiter (:meth:`GroupCommit.hold <bot.store.sql.writer.GroupCommit.hold>`): the
    write's first step is that event's insert, and this future learns whether it made a new row (``ok``) once the
    batch committed, or the batch's error; the write's own result then starts at its second step (unless
    ``merged``)."""
    merged: bool = False
    """With ``receipt``: the first step is :data:`RECEIVE_HANDLED`, the event's insert and its mark as handled in one
    statement; its row (when it returned one) says whether the row is new, and the step's count stays the write's
    own (the mark's)."""


@lru_cache(maxsize=512)
def numbered(sql: str) -> str:
    """``?`` placeholders as PostgreSQL's ``$1, $2, ...`` (our SQL has no ``?`` literals)."""
    counter = iter(range(1, 10_000))
    return re.sub(r"\?", lambda _m: f"${next(counter)}", sql)


# The tables of bot/store/sql/tables.py by name: importing SQLModel for them would cost a quarter of a second
# at every start (tests/store/test_schema.py checks the names agree).
_M = "session_messages"
_S = "chat_settings"
_E = "inbox"

INSERT_INBOX = (
    f"INSERT INTO {_E} (event_key, chat_key, kind, event, status, received_at) VALUES (?, ?, ?, ?, 'pending', ?) "
    "ON CONFLICT (event_key) DO NOTHING"
)
"""Intake: store an event before it is acknowledged (no row changed = seen before)."""
MARK_HANDLED = (
    f"INSERT INTO {_E} (event_key, chat_key, kind, event, status, received_at) VALUES (?, ?, '', '', 'done', ?) "
    f"ON CONFLICT (event_key) DO UPDATE SET status = 'done', event = '' WHERE {_E}.status = 'pending'"
)
"""Handling: a pending event becomes done (an event that never passed the intake is recorded done);
no row changed = handled before, so its handling is skipped (exactly once)."""
RECEIVE_HANDLED = (
    f"INSERT INTO {_E} (event_key, chat_key, kind, event, status, received_at) VALUES (?, ?, ?, '', 'done', ?) "
    f"ON CONFLICT (event_key) DO UPDATE SET status = 'done', event = '' WHERE {_E}.status = 'pending' "
    "RETURNING received_at = ?"
)
"""A held event's insert and :data:`MARK_HANDLED` in one statement (the SQLite writer, when the handler's write
marks that very event first: :meth:`GroupCommit.submit_handling <bot.store.sql.writer.GroupCommit.submit_handling>`).
The same rows as the two: a new event is stored handled (its JSON, which only a pending row needs, is not written);
a pending one becomes handled; a handled one changes nothing and returns no row, which stops the write as the mark's
guard did.  The row returned says whether the event is new (its ``received_at`` is this delivery's) or was pending
from an earlier delivery (the intake's receipt: duplicate)."""
INSERT_MESSAGE = f"INSERT INTO {_M} (chat_key, role, agent, data, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id"
INSERT_OUTBOX = (
    "INSERT INTO outbox (chat_key, message, interrupt_id, status, created_at) "
    "VALUES (?, ?, ?, 'pending', ?) RETURNING id"
)
INSERT_MESSAGES_HEAD = f"INSERT INTO {_M} (chat_key, role, agent, data, created_at) VALUES "
MESSAGE_ROW = "(?, ?, ?, ?, ?)"
ROWID_INSERTS = {sql: sql.removesuffix(" RETURNING id") for sql in (INSERT_MESSAGE, INSERT_OUTBOX)}
"""Statements that insert ONE row and return its ``id``, an ``INTEGER PRIMARY KEY`` (SQLite's rowid), by the same
statement without ``RETURNING``: the SQLite writer runs that one and hands back ``cursor.lastrowid`` as the row
(``RETURNING`` and fetching its row cost more than the statement's own work, and a message took three; measured:
see bench/README.md, "Per-message micro-optimisations").  Only plain inserts belong
here: an ``ON CONFLICT`` clause or a trigger would leave ``lastrowid`` at another row."""
DELETE_HISTORY = f"DELETE FROM {_M} WHERE chat_key = ?"
UPSERT_SETTING = (
    f"INSERT INTO {_S} (settings_key, name, value, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (settings_key, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
)
DELETE_SETTING = f"DELETE FROM {_S} WHERE settings_key = ? AND name = ?"

SELECT_HISTORY = f"SELECT id, data FROM {_M} WHERE chat_key = ? ORDER BY id DESC LIMIT ?"
SELECT_SETTINGS = f"SELECT name, value FROM {_S} WHERE settings_key = ?"
COUNT_EVENTS = f"SELECT count(*) FROM {_E}"
SELECT_EVENT_STATUS = f"SELECT status FROM {_E} WHERE event_key = ?"
SELECT_PENDING_EVENTS = f"SELECT kind, event FROM {_E} WHERE status = 'pending' ORDER BY seq"
SELECT_PENDING_EVENTS_BEFORE = (
    f"SELECT kind, event FROM {_E} WHERE status = 'pending' AND received_at < ? ORDER BY seq LIMIT 10000"
)

# Keep a chat's newest N rows: everything at or below the (N+1)-th newest id goes.
PRUNE_HISTORY = (
    f"DELETE FROM {_M} WHERE chat_key = ? AND id <= "
    f"(SELECT id FROM {_M} WHERE chat_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)"
)
# Keep the newest N handled ids (the (N+1)-th newest and older go); pending events are never pruned.
PRUNE_EVENTS = (
    f"DELETE FROM {_E} WHERE status = 'done' AND seq <= "
    f"(SELECT seq FROM {_E} WHERE status = 'done' ORDER BY seq DESC LIMIT 1 OFFSET ?)"
)


def outbox_step(chat_key: str, message_json: str, interrupt_id: str | None = None, at: datetime | None = None) -> Step:
    """Commit a reply, prompt or notice before it is sent (its row id comes back: :meth:`Delivery.deliver` marks
    it sent)."""
    return Step(INSERT_OUTBOX, (chat_key, message_json, interrupt_id, at or utcnow()), returning=True)


SECRET_MARK = "‹redacted: secret›"
"""What a configured secret value is replaced by in a stored row (:func:`bot.redaction.mark`)."""


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` with each of ``secrets`` replaced by ``‹redacted: secret›`` (only strings change)."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, SECRET_MARK)
    return value


def steps_of(changes: Iterable[object]) -> list[Step]:
    """The steps among ``changes`` a repository handed out (:class:`bot.store.ports.Change`); anything else is a
    programming error (a change of another store)."""
    steps = list(changes)
    for step in steps:
        if not isinstance(step, Step):
            raise TypeError(f"not a change of this store: {step!r}")
    return steps  # type: ignore[return-value]


def scrub(steps: Sequence[Step], secrets: Sequence[str]) -> Sequence[Step]:
    """``steps`` with each of ``secrets`` replaced in their text parameters (each row's, for a ``many`` step)."""
    # One scan of all the texts first: nearly every write holds none (a scan per parameter and secret was a few
    # percent of a process's CPU).
    texts = "\0".join([p for step in steps for p in _values(step) if isinstance(p, str)])
    if not any(s in texts for s in secrets):
        return steps
    out = list(steps)
    for i, step in enumerate(out):
        if step.many:
            out[i] = replace(step, params=tuple(tuple(redact(p, secrets) for p in row) for row in step.params))
        elif any(isinstance(p, str) and any(s in p for s in secrets) for p in step.params):
            out[i] = replace(step, params=tuple(redact(p, secrets) for p in step.params))
    return out


def _values(step: Step) -> Iterable[Any]:
    return chain.from_iterable(step.params) if step.many else step.params
