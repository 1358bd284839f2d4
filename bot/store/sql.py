"""The SQL store: SQLAlchemy Core over SQLite (aiosqlite) or PostgreSQL (asyncpg)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, event, insert, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agents.messages import Message
from bot.store.base import StoreError
from bot.store.migrate import migrate
from bot.store.tables import ChatSetting, ProcessedEvent, SessionMessage

log = logging.getLogger(__name__)

_messages = SessionMessage.__table__  # type: ignore[attr-defined]
_settings = ChatSetting.__table__  # type: ignore[attr-defined]
_processed = ProcessedEvent.__table__  # type: ignore[attr-defined]


def async_url(url: str) -> str:
    """Map ``sqlite:///`` and ``postgresql://`` URLs to their async drivers."""
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


def _now() -> datetime:
    return datetime.now(UTC)


def _row(chat_key: str, message: Message, at: datetime) -> dict[str, Any]:
    return {
        "chat_key": chat_key,
        "role": message.role,
        "agent": message.agent,
        "data": message.model_dump_json(exclude_defaults=True),
        "created_at": at,
    }


class SqlStore:
    """A :class:`~bot.store.base.Store` on an SQLAlchemy async engine."""

    def __init__(self, url: str, *, synchronous: str = "FULL", busy_timeout_ms: int = 5000) -> None:
        self.url = async_url(url)
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self._engine: AsyncEngine | None = None

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise StoreError("the store is not started")
        return self._engine

    async def start(self) -> None:
        if self.url.startswith("sqlite+aiosqlite:///"):
            path = self.url.removeprefix("sqlite+aiosqlite:///")
            if path and path != ":memory:":
                Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(self.url)
        if engine.dialect.name == "sqlite":

            @event.listens_for(engine.sync_engine, "connect")
            def _pragmas(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute(f"PRAGMA synchronous={self.synchronous}")
                cur.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
                cur.close()

        self._engine = engine
        try:
            await migrate(engine)
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"cannot open the database: {exc}") from exc

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    async def accept(self, event_key: str, chat_key: str, message: Message | None) -> bool:
        now = _now()
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(_processed).values(event_key=event_key, seen_at=now))
                if message is not None:
                    await conn.execute(insert(_messages).values(**_row(chat_key, message, now)))
        except IntegrityError:
            return False
        except SQLAlchemyError as exc:
            raise StoreError(f"could not store the message: {exc.__class__.__name__}") from exc
        return True

    async def append(self, chat_key: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        now = _now()
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(_messages), [_row(chat_key, m, now) for m in messages])
        except SQLAlchemyError as exc:
            raise StoreError(f"could not store the reply: {exc.__class__.__name__}") from exc

    async def history(self, chat_key: str, limit: int | None = None) -> list[Message]:
        query = select(_messages.c.data).where(_messages.c.chat_key == chat_key).order_by(_messages.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).scalars().all()
        return [Message.model_validate_json(data) for data in reversed(rows)]

    async def clear_history(self, chat_key: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(delete(_messages).where(_messages.c.chat_key == chat_key))

    async def chat_settings(self, settings_key: str) -> dict[str, Any]:
        query = select(_settings.c.name, _settings.c.value).where(_settings.c.settings_key == settings_key)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return {name: json.loads(value) for name, value in rows}

    async def set_chat_setting(self, settings_key: str, name: str, value: Any) -> None:
        where = (_settings.c.settings_key == settings_key) & (_settings.c.name == name)
        async with self.engine.begin() as conn:
            await conn.execute(delete(_settings).where(where))
            if value is not None:
                await conn.execute(
                    insert(_settings).values(
                        settings_key=settings_key, name=name, value=json.dumps(value), updated_at=_now()
                    )
                )


def open_store(url: str, *, synchronous: str = "FULL", busy_timeout_ms: int = 5000) -> SqlStore:
    """The store for a database URL (``sqlite:///path`` or ``postgresql://...``)."""
    return SqlStore(url, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
