"""The store interface the gateway depends on."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from agents.messages import Message

if TYPE_CHECKING:
    from bot.store.values import Change


class StoreError(RuntimeError):
    """A write or read failed; nothing was acknowledged.

    A write that raises it was not committed (its whole batch was rolled back).
    """


class EventNotStored(StoreError):
    """A handler's first write that carried its event's held insert (:meth:`EventLog.receive_held`) failed: the
    event was not stored either, and the intake told the platform so (it delivers the event again).  The handler
    stops; the redelivery is handled instead."""


class StoreUnavailable(StoreError):
    """The database could not take the write *now*: the disk is full, the file is locked, the server is gone or
    short of resources.  Nothing was committed, and the same write may well succeed later (a caller that can wait
    retries it); any other :class:`StoreError` may be the write's own fault (a constraint, bad data)."""


class Store(Protocol):
    """Sessions, chat settings and processed event ids.

    Every write returns only after it is durable (committed); writes of many
    chats may share one transaction.  Reads of history and settings are served
    from write-through caches after the first load, so the per-message path does
    not touch the database.
    """

    async def start(self) -> None:
        """Open connections and apply migrations."""

    async def close(self) -> None: ...

    async def accept(self, event_key: str, chat_key: str, message: Message | None) -> bool:
        """Record ``event_key`` as processed and ``message`` in the chat's history, atomically.

        Returns False (and stores nothing) when the event was seen before.
        """

    async def append(self, chat_key: str, messages: Sequence[Message]) -> None:
        """Append turns to a chat's history."""

    async def history(self, chat_key: str, limit: int | None = None) -> list[Message]:
        """The chat's most recent ``limit`` messages, oldest first.

        At most ``store.history_limit`` (the rows kept per chat); ``None`` means that many.
        """

    async def clear_history(self, chat_key: str) -> None: ...

    async def chat_settings(self, settings_key: str) -> dict[str, Any]:
        """Every per-chat setting of ``channel:chat_id``."""

    async def set_chat_setting(self, settings_key: str, name: str, value: Any) -> None:
        """Set (or with ``None`` delete) one per-chat setting."""


class SettingsReader(Protocol):
    """Reading chat and global settings on the per-message path (the routing policy's view of the store)."""

    async def settings_view(self, settings_key: str) -> Mapping[str, Any]:
        """The settings of ``settings_key``, not a copy: read it, do not change it."""


class EventLog(Protocol):
    """The inbox table as the intake uses it: store events before they are acknowledged, find unhandled ones."""

    def receive_step(self, event_key: str, chat_key: str, kind: str, event_json: str) -> Change:
        """The insert of one inbound event (no row when it was seen before)."""

    async def receive(self, steps: Sequence[Change]) -> list[bool]:
        """Commit the inserts in one transaction; which of them were new."""

    def receive_held(self, event_key: str, step: Change) -> Awaitable[bool]:
        """The insert ``step`` of an event handled in this process right away: committed with the handler's first
        write when that comes within two turns of the loop, else on its own; awaited, whether the row is new
        (raises :class:`StoreError` when it was not committed).  Not a coroutine: the insert waits from now on."""

    def handled_held(self, event_key: str) -> None:
        """The handler of an event given to :meth:`receive_held` is done (whatever it did)."""

    async def event_status(self, event_key: str) -> str | None: ...

    async def pending_events(self, received_before: datetime | None = None) -> list[tuple[str, str]]:
        """Events stored and not handled, oldest first: ``(kind, event JSON)``."""
