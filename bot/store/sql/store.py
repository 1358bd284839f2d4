"""The chat tables on the SQL engine (:mod:`bot.store.sql.engine`): the inbox, the history and the settings, with
write-through caches.

Every write goes to the engine's single writer (:mod:`bot.store.sql.writer`) and returns
after its batch committed.  Reads on the per-message path are served from
memory: a chat's newest ``history_limit`` messages and its settings are loaded
once (through the separate read path) and then kept equal to the database by
applying each committed write to them (:mod:`bot.store.sql.cache`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agents.messages import Message
from bot.store.base import StoreError
from bot.store.chat_state import ChatState
from bot.store.rows import INTERRUPT_COLUMNS, interrupt_from_row
from bot.store.sql.cache import ChatStateCache, PendingSlot
from bot.store.sql.engine import SqlEngine
from bot.store.sql.messages import add_rows, insert_messages, message_row
from bot.store.sql.migrate import async_url
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
    Step,
    WriteResult,
    steps_of,
    utcnow,
)
from bot.store.sql.settings import SettingsCache
from bot.store.sql.writer import ok_of
from bot.store.values import Change

__all__ = ["SqlStore", "async_url"]

SELECT_PENDING_INTERRUPT = f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE chat_key = ? AND status = 'pending'"


class SqlStore(SqlEngine):
    """A :class:`~bot.store.base.Store` (the chat tables: inbox, history, settings) on the SQL engine.

    Beyond the protocol: :meth:`chat_state` (the cached per-chat state, with room for the pending interrupt) and
    :meth:`forget_chats`; the engine's :meth:`write` / :meth:`read` serve the other tables' repositories.
    """

    settings_changes = 0
    """Counts loads and committed changes of chat settings: derived values cached on it stay valid."""

    def _new_caches(self) -> None:
        self.chats = ChatStateCache(
            self.cache_chats, history=self._load_history, settings=self._load_settings, pending=self._load_pending
        )
        published = getattr(self, "settings", None)
        self.settings = SettingsCache(self.chats.settings, self.clock, shared=self.shared)
        self.settings.published = published.published if published is not None else None

    def stats(self) -> dict[str, int]:
        out = super().stats()
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
