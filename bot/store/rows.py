"""Typed rows of the run tables: runs, interrupts, outbox entries, and their column lists."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from bot.events import ChatKey
from bot.store.values import utcnow

RUN_COLUMNS = "id, chat_key, agent, status, correlation_id, user_id, reply_to, history_cutoff, checkpoint, direct"
INTERRUPT_COLUMNS = (
    "id, chat_key, run_id, kind, prompt, payload, choices, nonce, requester, status, resolution, "
    "resolved_by, prompt_ref, reprompted, created_at, expires_at"
)


_parse_chat = lru_cache(maxsize=4096)(ChatKey.parse)
"""Keys are frozen: one parsed key serves every row of its chat (a run asks for it ten times or more)."""


class _InChat:
    chat_key: str

    @property
    def chat(self) -> ChatKey:
        """The chat, typed (``chat_key`` is its string form, as stored)."""
        return _parse_chat(self.chat_key)


@dataclass
class RunRow(_InChat):
    id: str
    chat_key: str
    agent: str
    status: str
    correlation_id: str
    user_id: str
    reply_to: str | None = None
    history_cutoff: int = 0
    checkpoint: dict[str, Any] | None = None
    direct: bool = False
    """The run is in a direct (one-to-one) chat: personal memory applies there (in groups only when enabled)."""


@dataclass
class InterruptRow(_InChat):
    id: str
    chat_key: str
    run_id: str
    kind: str
    prompt: str
    payload: dict[str, Any]
    choices: list[list[str]]
    nonce: str
    requester: str
    status: str = "pending"
    resolution: dict[str, Any] | None = None
    resolved_by: str | None = None
    prompt_ref: str | None = None
    reprompted: int = 0
    created_at: datetime = field(default_factory=utcnow)
    expires_at: datetime | None = None


@dataclass
class OutboxRow:
    id: int
    chat_key: str
    message: str
    interrupt_id: str | None


def run_from_row(row: tuple[Any, ...]) -> RunRow:
    rid, chat, agent, status, corr, user, reply_to, cutoff, checkpoint, direct = row
    return RunRow(
        rid,
        chat,
        agent,
        status,
        corr,
        user,
        reply_to,
        cutoff,
        json.loads(checkpoint) if checkpoint else None,
        bool(direct),
    )


def timestamp(value: Any) -> datetime | None:
    """SQLite hands timestamps back as ISO text, PostgreSQL as datetimes."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def interrupt_from_row(row: tuple[Any, ...]) -> InterruptRow:
    (iid, chat, run, kind, prompt, payload, choices, nonce, req, status, res, by, ref, rep, created, expires) = row
    created, expires = timestamp(created) or utcnow(), timestamp(expires)
    return InterruptRow(
        iid,
        chat,
        run,
        kind,
        prompt,
        json.loads(payload),
        json.loads(choices),
        nonce,
        req,
        status,
        json.loads(res) if res else None,
        by,
        ref,
        rep,
        created,
        expires,
    )
