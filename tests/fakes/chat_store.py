"""The chat store in memory: :class:`FakeChatStore` implements :class:`~bot.store.ports.ChatStore` (and so
:class:`~bot.store.base.Store`, :class:`~bot.store.base.SettingsReader`, :class:`~bot.store.base.EventLog`,
:class:`~bot.store.ports.ChatReads`), :class:`~bot.store.ports.TurnStore` and
:class:`~bot.store.bundle.PartitionedStore` (its ``settings`` is a :class:`~bot.store.bundle.SettingsAnnounce`:
:class:`FakeSettings`), held to :class:`~bot.store.sql.store.SqlStore` by ``tests/store/test_chat_store_contract.py``.

Its tables (:class:`Tables`) also hold the run tables :class:`tests.fakes.run_repos.FakeRuns` writes (runs,
interrupts, the tool ledger, the outbox, the audit log), so a change that repository hands out
(``start_run_step``, ``audit_step``) commits in the same transaction as this store's write it is given to
(``accept(extra=...)``, ``set_chat_setting(extra=...)``, :meth:`FakeChatStore.commit`), all or nothing.

What it does not reproduce (by design, not badly): durability (nothing survives the object) and group commit
(every write commits at once, alone: ``flush`` has nothing to wait for, ``*_later`` writes and held inserts are
committed when made, a held insert never fails with :class:`~bot.store.base.EventNotStored`); retention (every
history row is kept; reads still return at most ``history_limit``); redaction of the configured secrets (the run
tables redact as :mod:`bot.redaction` does, the ``secrets`` option of the SQL store has no counterpart); a chat
cache bounded in size.  Fencing is kept: a write inside :func:`bot.fencing.fenced` work whose token is no longer the
partition's raises :class:`~bot.fencing.LeaseLost` and writes nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from agents.messages import Message
from bot import fencing
from bot.fencing import LeaseLost
from bot.store.base import StoreError
from bot.store.chat_state import ChatState
from bot.store.rows import InterruptRow, OutboxRow, RunRow
from bot.store.values import Change, utcnow

__all__ = ["FakeChange", "FakeChatStore", "FakeSettings", "Tables", "Transaction"]


@dataclass(slots=True)
class Event:
    """A row of the inbox."""

    chat_key: str
    kind: str
    event: str
    status: str
    received_at: datetime


@dataclass(slots=True)
class Tables:
    """Every table of the fake store.  A transaction works on a :meth:`copy`: containers are copied, rows are never
    changed in place (a change puts a new row), so the copy is kept or dropped whole."""

    inbox: dict[str, Event] = field(default_factory=dict)
    messages: dict[int, tuple[str, Message]] = field(default_factory=dict)
    """History rows by id, in id order: (chat, message)."""
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    fences: dict[int, int] = field(default_factory=dict)
    runs: dict[str, RunRow] = field(default_factory=dict)
    """In the order they were created."""
    interrupts: dict[str, InterruptRow] = field(default_factory=dict)
    ledger: dict[tuple[str, str], tuple[int, str, str, str | None, str]] = field(default_factory=dict)
    """(run, call) → (when updated, name, status, result JSON, args JSON)."""
    outbox: dict[int, OutboxRow] = field(default_factory=dict)
    """Entries committed and not yet sent (a sent one is removed), by id."""
    audit: list[dict[str, Any]] = field(default_factory=list)
    last_id: dict[str, int] = field(default_factory=dict)
    """The last id each autoincrement column gave (``messages``, ``outbox``, ``ledger``…)."""

    def copy(self) -> Tables:
        return Tables(
            dict(self.inbox), dict(self.messages), dict(self.settings), dict(self.fences), dict(self.runs),
            dict(self.interrupts), dict(self.ledger), dict(self.outbox), list(self.audit), dict(self.last_id),
        )  # fmt: skip

    def next_id(self, column: str) -> int:
        self.last_id[column] = self.last_id.get(column, 0) + 1
        return self.last_id[column]

    def chat_rows(self, chat_key: str) -> list[tuple[int, Message]]:
        return [(row_id, m) for row_id, (chat, m) in self.messages.items() if chat == chat_key]


@dataclass(slots=True)
class Transaction:
    """One commit's view: the tables it changes and what to do once it committed (the caches follow)."""

    tables: Tables
    after: list[Callable[[], None]] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    """Ids the changes made (history rows, outbox entries), in order: the SQL write's ``RETURNING`` rows."""


@dataclass(frozen=True, slots=True)
class FakeChange:
    """A change of the fake store's tables (a :class:`~bot.store.values.Change`): False from ``apply`` when its
    guard stops the commit (nothing of it is kept); a constraint it breaks raises :class:`StoreError`."""

    apply: Callable[[Transaction], bool]
    name: str


class FakeSettings:
    """:class:`~bot.store.bundle.SettingsAnnounce` of the fake: ``published`` is told each settings key committed;
    :meth:`changed` drops the cached views (another process changed the key: here, a test says so)."""

    def __init__(self) -> None:
        self.published: Callable[[str], None] | None = None
        self.views: dict[str, dict[str, Any]] = {}

    def changed(self, key: str | None) -> None:
        if key is None:
            self.views.clear()
        else:
            self.views.pop(key, None)


class FakeChatStore:
    """The chat store in a few dicts (see the module's docstring for what it leaves out)."""

    def __init__(self, *, history_limit: int = 200, now: Callable[[], datetime] = utcnow) -> None:
        """``now``: naive UTC, as the store's timestamps (inbox rows' receipt, interrupts' creation...)."""
        self.history_limit = history_limit
        self.now = now
        self.tables = Tables()
        self.settings = FakeSettings()
        self.commits = 0
        """Transactions committed (a write a guard stopped is not one)."""
        self._states: dict[str, ChatState] = {}

    # -- transactions -------------------------------------------------------------------------------------------

    def commit(self, changes: Sequence[Change], what: str = "the write") -> int | None:
        """Apply ``changes`` in one transaction: None when committed, else the position of the change whose guard
        stopped it (nothing was kept).  Only changes of this store (:class:`FakeChange`): TypeError otherwise."""
        return self.transact(changes, what)[0]

    def transact(self, changes: Sequence[Change], what: str = "the write") -> tuple[int | None, list[int]]:
        """:meth:`commit`, also giving the ids the changes made (as the SQL write's returned rows)."""
        fence = fencing.check(what)
        if fence is not None and self.tables.fences.get(fence.partition) != fence.token:
            raise LeaseLost("the partition has another owner: the write was refused")
        tx = Transaction(self.tables.copy())
        for n, change in enumerate(changes):
            if not isinstance(change, FakeChange):
                raise TypeError(f"not a change of the fake store: {change!r}")
            if not change.apply(tx):
                return n, []
        self.tables = tx.tables
        self.commits += 1
        for then in tx.after:
            then()
        return None, tx.returned

    def insert_messages(self, chat_key: str, messages: Sequence[Message]) -> FakeChange:
        """The history rows of ``messages`` (their ids returned), the chat's cached state following on commit."""

        def insert(tx: Transaction) -> bool:
            for message in messages:
                row_id = tx.tables.next_id("messages")
                tx.tables.messages[row_id] = (chat_key, message)
                tx.returned.append(row_id)
                tx.after.append(partial(self._cached_add, chat_key, row_id, message))
            return True

        return FakeChange(insert, "insert messages")

    def _cached_add(self, chat_key: str, row_id: int, message: Message) -> None:
        state = self._states.get(chat_key)
        if state is not None:
            state.add(row_id, message)

    def mark_handled(self, event_key: str, chat_key: str) -> FakeChange:
        """A pending event becomes done (one never stored is recorded done); the guard: it was not done before."""

        def mark(tx: Transaction) -> bool:
            row = tx.tables.inbox.get(event_key)
            if row is not None and row.status != "pending":
                return False
            received = self.now() if row is None else row.received_at
            kind = "" if row is None else row.kind
            tx.tables.inbox[event_key] = Event(chat_key if row is None else row.chat_key, kind, "", "done", received)
            return True

        return FakeChange(mark, "mark handled")

    # -- the Store protocol -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to open."""

    async def close(self) -> None:
        """Nothing to close (the tables stay: a test may read them)."""

    async def flush(self) -> None:
        """Every write committed when it was made: nothing to wait for."""

    async def accept(
        self, event_key: str, chat_key: str, message: Message | None, *, extra: Sequence[Change] = ()
    ) -> bool:
        steps: list[Change] = [self.mark_handled(event_key, chat_key)]
        if message is not None:
            steps.append(self.insert_messages(chat_key, [message]))
        return self.commit([*steps, *extra]) is None

    async def append(self, chat_key: str, messages: Sequence[Message]) -> None:
        if messages:
            self.commit([self.insert_messages(chat_key, messages)])

    async def history(self, chat_key: str, limit: int | None = None) -> list[Message]:
        n = self.history_limit if limit is None else min(limit, self.history_limit)
        if n <= 0:
            return []
        return (await self.chat_state(chat_key)).newest(n)

    async def chat_state(self, chat_key: str) -> ChatState:
        state = self._states.get(chat_key)
        if state is None:
            rows = self.tables.chat_rows(chat_key)[-self.history_limit :] if self.history_limit else []
            state = self._states[chat_key] = ChatState.loaded(rows, self.history_limit)
        return state

    async def clear_history(self, chat_key: str) -> None:
        def clear(tx: Transaction) -> bool:
            tx.tables.messages = {k: row for k, row in tx.tables.messages.items() if row[0] != chat_key}
            state = self._states.get(chat_key)
            if state is not None:
                tx.after.append(state.clear)
            return True

        self.commit([FakeChange(clear, "clear history")])

    def forget_chats(self, which: Callable[[str], bool]) -> None:
        self._states = {chat: state for chat, state in self._states.items() if not which(chat)}

    async def raise_fence(self, partition: int, owner: str) -> int:
        tables = self.tables
        tables.fences[partition] = tables.fences.get(partition, 0) + 1
        return tables.fences[partition]

    # -- settings -----------------------------------------------------------------------------------------------

    async def chat_settings(self, settings_key: str) -> dict[str, Any]:
        return dict(await self.settings_view(settings_key))

    async def settings_view(self, settings_key: str) -> Mapping[str, Any]:
        views = self.settings.views
        view = views.get(settings_key)
        if view is None:
            view = views[settings_key] = dict(self.tables.settings.get(settings_key, {}))
        return view

    async def set_chat_setting(self, settings_key: str, name: str, value: Any, *, extra: Sequence[Change] = ()) -> None:
        """Set (``None`` deletes) a setting, stored as JSON (tuples come back as lists); ``extra`` commits with it."""
        stored = None if value is None else json.loads(json.dumps(value))

        def apply(settings: dict[str, Any]) -> None:
            if stored is None:
                settings.pop(name, None)
            else:
                settings[name] = stored

        def change(tx: Transaction) -> bool:
            settings = dict(tx.tables.settings.get(settings_key, {}))
            apply(settings)
            tx.tables.settings[settings_key] = settings
            tx.after.append(lambda: self._settings_committed(settings_key, apply))
            return True

        self.commit([FakeChange(change, "set setting"), *extra])

    def _settings_committed(self, settings_key: str, apply: Callable[[dict[str, Any]], None]) -> None:
        view = self.settings.views.get(settings_key)
        if view is not None:
            apply(view)
        if self.settings.published is not None:
            self.settings.published(settings_key)

    # -- the inbox (EventLog) -----------------------------------------------------------------------------------

    def receive_step(self, event_key: str, chat_key: str, kind: str, event_json: str) -> FakeChange:
        received = self.now()

        def insert(tx: Transaction) -> bool:
            if event_key in tx.tables.inbox:
                return False
            tx.tables.inbox[event_key] = Event(chat_key, kind, event_json, "pending", received)
            return True

        return FakeChange(insert, "receive")

    async def receive(self, steps: Sequence[Change]) -> list[bool]:
        return [self.commit([step], "the intake's insert") is None for step in steps]

    def receive_held(self, event_key: str, step: Change) -> Awaitable[bool]:
        """Committed now (no group commit to hold it for): the future is done already."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        done.set_result(self.commit([step], "the intake's insert") is None)
        return done

    def handled_held(self, event_key: str) -> None:
        """Nothing held."""

    async def event_status(self, event_key: str) -> str | None:
        row = self.tables.inbox.get(event_key)
        return None if row is None else row.status

    async def pending_events(self, received_before: datetime | None = None) -> list[tuple[str, str]]:
        return [
            (row.kind, row.event)
            for row in self.tables.inbox.values()
            if row.status == "pending" and (received_before is None or row.received_at < received_before)
        ][:10_000]

    def stored(self, chat_key: str) -> list[Message]:
        """Every history row of the chat as stored (retention aside), oldest first: for a test's assertions."""
        return [m for _, m in self.tables.chat_rows(chat_key)]


def check_error(condition: bool, message: str) -> None:
    """A constraint of the schema: :class:`StoreError` (the write rolls back) when ``condition`` is false."""
    if not condition:
        raise StoreError(message)
