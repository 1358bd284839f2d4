"""Where state lives: ``store`` (the database and what it keeps) and ``bus`` (Redis Streams between gateways
and workers, or the in-process bus)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreSection(_Section):
    url: str | None = None
    data_dir: Path = Path("data")
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    busy_timeout_ms: int = Field(5000, ge=0)
    history_limit: int = Field(200, ge=1)
    context_chars: int = Field(24000, ge=100)
    processed_ids_limit: int = Field(100000, ge=100)
    cache_chats: int = Field(1000, ge=1)
    """Chats whose recent history and settings stay in memory (least recently used go first)."""
    max_batch: int = Field(256, ge=1)
    """Most writes committed in one transaction (group commit)."""
    retention_interval_s: float = Field(5.0, gt=0)
    """How often the writer prunes history and processed ids beyond their limits."""
    runs_retention_days: float = Field(30, gt=0)
    """Finished runs, with their interrupts and tool ledger, are deleted this many days after they ended."""
    audit_retention_days: float = Field(365, gt=0)
    """Admin changes (the audit log) are kept this many days."""

    def database_url(self) -> str:
        if self.url:
            return self.url
        return f"sqlite:///{self.data_dir.expanduser() / 'bot.db'}"


class BusSection(_Section):
    url: str | None = None
    """``redis://host:port/db``: inbound events and outbound messages go through Redis Streams, so gateways and
    workers may be separate processes (``bot run --role``); absent: the in-process bus (one process)."""
    partitions: int = Field(64, ge=1, le=4096)
    """Inbound partition streams (a chat's events all go to ``crc32(chat_key) % partitions``)."""
    lease_ms: int = Field(10000, ge=500)
    """How long a worker's claim on a partition (and a gateway's on an exclusive connection) lasts unrenewed:
    the time for a dead worker's chats to move to another. Renewed every third of it."""
    stream_maxlen: int = Field(100000, ge=1000)
    """Entries kept per stream (approximately); handled entries are acknowledged long before."""
    sweep_s: float = Field(60.0, gt=0)
    """How often a gateway republishes events committed to the inbox but older than twice this and still
    unhandled (Redis lost them); handling stays exactly once (the inbox row)."""
    max_concurrent_chats: int = Field(64, ge=1)
    max_pending: int = Field(10000, ge=1)
