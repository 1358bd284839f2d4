"""The schema, as SQLModel tables.  Every change adds an Alembic migration."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class SessionMessage(SQLModel, table=True):
    """One message of a chat's history (user, assistant or tool turn), as JSON."""

    __tablename__ = "session_messages"

    id: int | None = Field(default=None, primary_key=True)
    chat_key: str = Field(index=True, max_length=255)
    role: str = Field(max_length=16)
    agent: str | None = Field(default=None, max_length=64)
    data: str
    created_at: datetime


class ChatSetting(SQLModel, table=True):
    """A per-chat setting (strategy override, pinned agent, tool grants)."""

    __tablename__ = "chat_settings"

    settings_key: str = Field(primary_key=True, max_length=255)
    name: str = Field(primary_key=True, max_length=128)
    value: str
    updated_at: datetime


class ProcessedEvent(SQLModel, table=True):
    """A platform event id seen before (de-duplication)."""

    __tablename__ = "processed_events"

    event_key: str = Field(primary_key=True, max_length=255)
    seen_at: datetime = Field(index=True)
