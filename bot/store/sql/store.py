"""The SQL store: group-committed writes, write-through caches, SQLite or PostgreSQL.

Every write goes to the single writer (:mod:`bot.store.sql.writer`) and returns
after its batch committed.  Reads on the per-message path are served from
memory: a chat's newest ``history_limit`` messages and its settings are loaded
once (through the separate read path) and then kept equal to the database by
applying each committed write to them (:mod:`bot.store.sql.cache`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from agents.messages import Message
from bot import fencing
from bot.clock import SYSTEM_CLOCK, Clock
from bot.fencing import LeaseLost
from bot.store.base import StoreError
from bot.store.chat_state import ChatState
from bot.store.rows import INTERRUPT_COLUMNS, interrupt_from_row
from bot.store.sql import fences
from bot.store.sql.cache import ChatStateCache, PendingSlot
from bot.store.sql.lock import ProcessLock
from bot.store.sql.messages import add_rows, insert_messages, message_row
from bot.store.sql.migrate import async_url, migrate_url
from bot.store.sql.ops import (
    DELETE_HISTORY,
    DELETE_SETTING,
    INSERT_INBOX,
    INSERT_MESSAGE,
    MARK_HANDLED,
    SELECT_EVENT_STATUS,
    SELECT_HISTORY,
    SELECT_PENDING_EVENTS,
    SELECT_PENDING_EVENTS_BEFORE,
    SELECT_SETTINGS,
    UPSERT_SETTING,
    OnCommit,
    Step,
    WriteResult,
    scrub,
    steps_of,
    utcnow,
)
from bot.store.sql.paths import sqlite_file
from bot.store.sql.retention import Retention, RetentionRule
from bot.store.sql.settings import SettingsCache
from bot.store.sql.writer import GroupCommit, ok_of
from bot.store.values import Change

__all__ = ["SqlStore", "async_url"]

SELECT_PENDING_INTERRUPT = f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE chat_key = ? AND status = 'pending'"

log = logging.getLogger(__name__)


class Reader(Protocol):
    """The read path of a backend (its own connections, never the writer's)."""

    reads: int

    async def open(self) -> None: ...

    async def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    async def close(self) -> None: ...


class SqlStore:
    """A :class:`~bot.store.base.Store` on SQLite (``sqlite:///path``) or PostgreSQL (``postgresql://``).

    Beyond the protocol: :meth:`write` / :meth:`read` for the tables of later
    steps, :meth:`chat_state` (the cached per-chat state, with room for the
    pending interrupt), :meth:`flush`, :meth:`prune`, :meth:`add_retention`
    and :meth:`stats`.
    """

    def __init__(
        self,
        url: str,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 5000,
        history_limit: int = 200,
        processed_ids_limit: int = 100_000,
        cache_chats: int = 1000,
        max_batch: int = 256,
        retention_interval_s: float = 5.0,
        exclusive: bool = False,
        secrets: Iterable[str] = (),
        read_only: bool = False,
        shared: bool = False,
        commit_timer: Callable[[float], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``commit_timer``: told each group commit's duration in seconds (a metric); ``clock``: when retention
        passes are due."""
        self.url = url
        self.clock = clock
        self.commit_timer = commit_timer
        self.shared = shared
        """Other processes write this database too (workers of a scaled-out bot): chat and global settings,
        which any of them may change, are re-read on an announced change and after a TTL
        (:mod:`bot.store.sql.settings`); a chat's history stays cached while this process owns the chat
        (:meth:`forget_chats` when that changes)."""
        self.read_only = read_only
        """Only reads (``bot trace``): nothing is created or migrated; a missing database is an error."""
        self.secrets = tuple(sorted({v for v in secrets if len(v) >= 8}, key=len, reverse=True))
        """Known secret values (tokens, keys): replaced by ``‹redacted: secret›`` in every value written, whatever row
        it is."""
        self.exclusive = exclusive
        """SQLite: hold ``<database>.lock`` while open, so a second process fails at start (the gateway's)."""
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self.history_limit = history_limit
        self.processed_ids_limit = processed_ids_limit
        self.cache_chats = cache_chats
        self.max_batch = max_batch
        self.retention_interval_s = retention_interval_s
        self.dialect = "postgresql" if url.split(":", 1)[0].startswith("postgres") else "sqlite"
        self._rules: list[RetentionRule] = []
        self.settings_changes = 0
        """Counts loads and committed changes of chat settings: derived values cached on it stay valid."""
        self._writer: GroupCommit | None = None
        self._reader: Reader | None = None
        self._tempdir: str | None = None
        self._lock: ProcessLock | None = None
        self._idle_retention: asyncio.Task[None] | None = None
        self._new_caches()

    def _new_caches(self) -> None:
        self.chats = ChatStateCache(
            self.cache_chats, history=self._load_history, settings=self._load_settings, pending=self._load_pending
        )
        published = getattr(self, "settings", None)
        self.settings = SettingsCache(self.chats.settings, self.clock, shared=self.shared)
        self.settings.published = published.published if published is not None else None

    # -- life cycle ---------------------------------------------------------------

    async def start(self) -> None:
        if self._reader is not None:
            return
        retention = Retention(
            history_limit=self.history_limit,
            processed_ids_limit=self.processed_ids_limit,
            interval_s=self.retention_interval_s,
            clock=self.clock.monotonic,
        )
        retention.rules = self._rules  # shared, so rules added later count too
        writer: GroupCommit | None
        reader: Reader
        if self.dialect == "postgresql":
            try:
                from bot.store.sql.postgres import PgReader, PgWriter, dsn_of
            except ImportError as exc:
                raise StoreError(
                    f"PostgreSQL needs the postgres extra ({exc}): pip install -e '.[postgres]' in the bot's clone"
                ) from None
            url = self.url
            writer = PgWriter(
                dsn_of(url), busy_timeout_ms=self.busy_timeout_ms, retention=retention, max_batch=self.max_batch
            )
            reader = PgReader(dsn_of(url))
        else:
            from bot.store.sql.sqlite import SqliteReader, SqliteWriter

            path = self._sqlite_path()
            url = f"sqlite:///{path}"
            if self.exclusive and not self.read_only:
                self._lock = ProcessLock(Path(path + ".lock"))
                self._lock.acquire(path)
            writer = SqliteWriter(
                path,
                synchronous=self.synchronous,
                busy_timeout_ms=self.busy_timeout_ms,
                retention=retention,
                max_batch=self.max_batch,
            )
            reader = SqliteReader(path, busy_timeout_ms=self.busy_timeout_ms)
        writer.timer = self.commit_timer
        if self.read_only:
            writer = None  # a tool that only reads: no migration, no writer, nothing created
        try:
            if writer is not None:
                try:
                    await migrate_url(url)
                except Exception as exc:  # SQLAlchemy's errors, OSError: whatever stops the migration
                    raise StoreError(f"cannot open the database: {exc}") from exc
                await writer.open()
            try:
                await reader.open()
            except BaseException:
                if writer is not None:
                    await writer.close()
                raise
        except BaseException:
            self._unlock()
            raise
        self._writer, self._reader = writer, reader
        self._new_caches()
        if writer is not None:
            # Passes also run when nothing is written (the writer runs them between batches otherwise),
            # so a chat's history is cut to its limit soon after its last message, not at the next one.
            self._idle_retention = asyncio.create_task(self._retain_when_idle(retention), name="store-retention")
        log.info("store: %s (synchronous=%s)", self.dialect, self.synchronous if self.dialect == "sqlite" else "-")

    def _sqlite_path(self) -> str:
        path = self.url.split(":///", 1)[1] if ":///" in self.url else ""
        if path in ("", ":memory:"):
            # Two connections cannot share a private in-memory database: use a
            # throw-away file instead (same semantics for the process's lifetime).
            self._tempdir = tempfile.mkdtemp(prefix="bot-store-")
            return str(Path(self._tempdir) / "bot.db")
        return sqlite_file(path, read_only=self.read_only)

    async def _retain_when_idle(self, retention: Retention) -> None:
        while True:
            await self.clock.sleep(retention.interval_s)
            if retention.grew() and retention.due():
                try:
                    await self.prune()
                except StoreError as exc:
                    log.warning("store: retention pass failed (tried again later): %s", exc)

    async def close(self) -> None:
        task, self._idle_retention = self._idle_retention, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        writer, reader = self._writer, self._reader
        self._writer = self._reader = None
        if writer is not None:
            await writer.close()
        if reader is not None:
            await reader.close()
        self._new_caches()
        self._unlock()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def _unlock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    # -- generic access, for the tables of later steps ------------------------------

    async def write(
        self,
        steps: Sequence[Step],
        *,
        on_commit: OnCommit | None = None,
        grows: str | None = None,
        events: int = 0,
        first: bool = False,
        received: str | None = None,
    ) -> WriteResult:
        """Run ``steps`` in the next group commit; returns after the commit.

        ``first``: ahead of the writes already queued, in a small commit of its own (as for
        :meth:`write_later`; only for steps on rows that are committed already).
        ``received``: the inbound event this write marks handled; when its insert is still held
        (:meth:`receive_held`), the write carries it, and raises :class:`EventNotStored` if it fails.

        Inside a partition's work (:func:`bot.fencing.fenced`) the write first checks the partition's fencing
        token in the same transaction; :class:`~bot.fencing.LeaseLost` when it is no longer current (nothing
        was written).
        """
        if self._writer is None:
            raise StoreError("the store is not started")
        steps = self._fenced(self._scrub(steps), "the write")
        if received is None:
            result = await self._writer.submit(steps, on_commit=on_commit, grows=grows, events=events, first=first)
        else:
            result = await self._writer.submit_handling(
                received, steps, on_commit=on_commit, grows=grows, events=events
            )
        if result.fenced:
            raise LeaseLost("the partition has another owner: the write was refused")
        return result

    def write_later(self, steps: Sequence[Step], *, what: str = "write", first: bool = False) -> None:
        """Queue ``steps`` for the next group commit without waiting for it.

        For bookkeeping nobody waits on (a run's start row, an outbox entry marked
        sent): later writes are committed after it, in order, and a failure is logged.
        ``first``: ahead of the writes already queued, for a mark whose delay has a cost
        (a reply sent and not yet marked is sent again after a crash); only for steps on
        rows that are committed already.
        """
        if self._writer is None:
            raise StoreError("the store is not started")
        self._writer.submit_unwaited(self._fenced(self._scrub(steps), what), what, first=first)

    def _fenced(self, steps: Sequence[Step], what: str) -> Sequence[Step]:
        """``steps`` behind the current partition's fencing token, if the work running now has one."""
        return fences.behind(fencing.check(what), steps, self.dialect)

    async def raise_fence(self, partition: int, owner: str) -> int:
        """A new fencing token for ``partition``, from now on the only one its writes may carry.

        In a transaction of its own (on the read path's connections, not in a group commit): it waits for the
        batches that hold the old token to commit, and every write that checks the old token afterwards is
        refused.
        """
        if self._reader is None:
            raise StoreError("the store is not started")
        params = (partition, owner, utcnow())
        if self.dialect == "sqlite":  # one writer: its queue is the order
            return int((await self.write([Step(fences.RAISE_FENCE, params, returning=True)])).rows[0][0])
        return int((await self._reader.fetch(fences.RAISE_FENCE, params))[0][0])

    def _scrub(self, steps: Sequence[Step]) -> Sequence[Step]:
        """``steps`` with known secret values replaced in their text parameters (a model's answer or a
        tool's output may repeat a token; no stored row ever holds one)."""
        return scrub(steps, self.secrets) if self.secrets else steps

    @property
    def many_rows(self) -> bool:
        """Whether writes may hold :attr:`Step.many <bot.store.sql.ops.Step.many>` steps (SQLite's writer runs them
        with ``executemany``; PostgreSQL's takes multi-row statements instead)."""
        return self.dialect == "sqlite"

    async def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query on the read path (not for the per-message path: use the caches)."""
        if self._reader is None:
            raise StoreError("the store is not started")
        return await self._reader.fetch(sql, params)

    async def flush(self) -> None:
        """Wait until every write submitted before this call is committed (held inserts too)."""
        if self._writer is not None:
            self._writer.release_held()
        await self.write(())

    async def prune(self) -> None:
        """Run a retention pass now (normally the writer runs one every interval)."""
        if self._writer is None:
            raise StoreError("the store is not started")
        await self._writer.submit((), prune=True)

    def add_retention(self, rule: RetentionRule) -> None:
        """Add statements to every retention pass (e.g. drop old trace events)."""
        self._rules.append(rule)

    def stats(self) -> dict[str, int]:
        out = self._writer.stats.as_dict() if self._writer is not None else {}
        out["reads"] = self._reader.reads if self._reader is not None else 0
        out["cached_chats"] = len(self.chats.history.lru)
        return out

    # -- the Store protocol ---------------------------------------------------------

    async def accept(
        self, event_key: str, chat_key: str, message: Message | None, *, extra: Sequence[Change] = ()
    ) -> bool:
        """Mark the inbound event ``event_key`` handled, with ``message`` in the history and ``extra``
        changes (this store's steps, taken unchecked) in one transaction; False when it was handled before."""
        now = utcnow()
        steps = [Step(MARK_HANDLED, (event_key, chat_key, now), guard=True)]
        if message is not None:
            steps.append(Step(INSERT_MESSAGE, message_row(chat_key, message, now), returning=True))
        steps.extend(extra)  # type: ignore[arg-type]

        def committed(result: WriteResult) -> None:
            if result.ok and message is not None:
                self.chats.history.committed(chat_key, lambda state: state.add(result.rows[0][0], message))

        # ``events``: the row may be new (an event that never passed the intake); retention recounts.
        result = await self.write(
            steps, on_commit=committed, grows=chat_key if message else None, events=1, received=event_key
        )
        return result.ok

    def receive_step(self, event_key: str, chat_key: str, kind: str, event_json: str) -> Step:
        """The intake's insert of an inbound event (a guard: no row when the event was seen before)."""
        return Step(INSERT_INBOX, (event_key, chat_key, kind, event_json, utcnow()), guard=True)

    async def receive(self, steps: Sequence[Change]) -> list[bool]:
        """Commit the intake's inserts (one write each, so a duplicate stops only itself); which were new."""
        writer = self._writer
        if writer is None:
            raise StoreError("the store is not started")
        futures = [writer.submit(self._scrub([step]), events=1) for step in steps]  # type: ignore[list-item]
        return [(await future).ok for future in futures]

    def receive_held(self, event_key: str, step: Change) -> Awaitable[bool]:
        """The intake's insert of an event this process handles right away, held for the handler's first write
        (see :mod:`bot.store.sql.writer`); awaited, whether the row is new."""
        writer = self._writer
        if writer is None:
            raise StoreError("the store is not started")
        return ok_of(writer.hold(event_key, self._scrub([step])[0]))  # type: ignore[list-item]

    def handled_held(self, event_key: str) -> None:
        if self._writer is not None:
            self._writer.handled(event_key)

    async def event_status(self, event_key: str) -> str | None:
        """``pending`` or ``done`` for a stored inbound event, None when unknown."""
        rows = await self.read(SELECT_EVENT_STATUS, (event_key,))
        return str(rows[0][0]) if rows else None

    async def pending_events(self, received_before: datetime | None = None) -> list[tuple[str, str]]:
        """Inbound events committed and not yet handled, oldest first: ``(kind, event JSON)``.

        ``received_before``: only those received before then (at most 10,000 per call).
        """
        if received_before is None:
            return [(kind, data) for kind, data in await self.read(SELECT_PENDING_EVENTS)]
        return [(kind, data) for kind, data in await self.read(SELECT_PENDING_EVENTS_BEFORE, (received_before,))]

    async def append(self, chat_key: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        steps = insert_messages(chat_key, messages, utcnow())

        def committed(result: WriteResult) -> None:
            self.chats.history.committed(chat_key, lambda state: add_rows(state, result.rows, messages))

        await self.write(steps, on_commit=committed, grows=chat_key)

    async def history(self, chat_key: str, limit: int | None = None) -> list[Message]:
        """The newest ``limit`` messages, oldest first; never more than ``history_limit``."""
        n = self.history_limit if limit is None else min(limit, self.history_limit)
        if n <= 0:
            return []
        return (await self.chat_state(chat_key)).newest(n)

    async def chat_state(self, chat_key: str) -> ChatState:
        """The cached state of a chat (loaded on first use)."""
        if self._reader is None:
            raise StoreError("the store is not started")
        return await self.chats.history.get(chat_key)

    async def clear_history(self, chat_key: str) -> None:
        await self.write(
            [Step(DELETE_HISTORY, (chat_key,))],
            on_commit=lambda _r: self.chats.history.committed(chat_key, ChatState.clear),
        )

    def forget_chats(self, which: Callable[[str], bool]) -> None:
        """Drop what is cached of the chats ``which`` selects (their partition moved to or from this worker:
        the one that held it may have written since)."""
        self.chats.forget(which)

    async def chat_settings(self, settings_key: str) -> dict[str, Any]:
        return dict(await self.settings_view(settings_key))

    async def settings_view(self, settings_key: str) -> Mapping[str, Any]:
        """The cached settings themselves, not a copy: for reading on the per-message path (a hit costs no await
        and no copy; the mapping changes when a setting commits)."""
        if self._reader is None:
            raise StoreError("the store is not started")
        return await self.settings.view(settings_key)

    async def set_chat_setting(self, settings_key: str, name: str, value: Any, *, extra: Sequence[Change] = ()) -> None:
        """Set (``None`` deletes) a setting; ``extra`` steps (an audit row) commit with it."""
        if value is None:
            step = Step(DELETE_SETTING, (settings_key, name))
        else:
            step = Step(UPSERT_SETTING, (settings_key, name, json.dumps(value), utcnow()))
        # Cache what a reload would give (JSON round trip: tuples become lists...).
        cached = None if value is None else json.loads(step.params[2])

        def apply(settings: dict[str, Any]) -> None:
            self.settings_changes += 1
            if cached is None:
                settings.pop(name, None)
            else:
                settings[name] = cached

        await self.write([step, *steps_of(extra)], on_commit=lambda _r: self.settings.committed(settings_key, apply))

    # -- the read path ----------------------------------------------------------------

    async def _load_history(self, chat_key: str) -> ChatState:
        rows = await self.read(SELECT_HISTORY, (chat_key, self.history_limit))
        messages = [(row_id, Message.model_validate_json(data)) for row_id, data in reversed(rows)]
        return ChatState.loaded(messages, self.history_limit)

    async def _load_pending(self, chat_key: str) -> PendingSlot:
        rows = await self.read(SELECT_PENDING_INTERRUPT, (chat_key,))
        return PendingSlot(interrupt_from_row(rows[0]) if rows else None)

    async def _load_settings(self, settings_key: str) -> dict[str, Any]:
        rows = await self.read(SELECT_SETTINGS, (settings_key,))
        self.settings_changes += 1
        self.settings.loaded(settings_key)
        return {name: json.loads(value) for name, value in rows}
