"""Values the repositories and their callers share (:mod:`bot.store.ports`): kept apart so the ports and the SQL
implementations both import them without importing each other.  Nothing here imports an implementation (the
layering test checks it): the ports and their values sit at the bottom of the store, the SQL above them.

Beside these: the run tables' typed rows (:mod:`bot.store.rows`) and a chat's cached state
(:mod:`bot.store.chat_state`), values of the same kind in modules of their own."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, TypeVar


class Change(Protocol):
    """One change a repository made for a later commit (opaque to the service: it only hands it back)."""


@dataclass(frozen=True, slots=True)
class Committed:
    """The outcome of a commit of changes: ``ok`` False when a guard stopped it (someone else was first)."""

    ok: bool
    outbox_id: int | None = None


@dataclass(frozen=True, slots=True)
class Rewrite:
    """New values for some columns of one row of a place :class:`~bot.store.ports.ScrubRepo` reads."""

    place: str
    key: tuple[Any, ...]
    values: Mapping[str, str] = field(default_factory=dict)


class StoredTrigger(Protocol):
    """A job's schedule as the store keeps it (:class:`bot.jobs.triggers.Trigger`): JSON."""

    def to_json(self) -> dict[str, str]: ...


T_co = TypeVar("T_co", bound=StoredTrigger, covariant=True)


class TriggerReader(Protocol[T_co]):
    """Reads a stored schedule back (``Trigger`` itself: its ``from_json``)."""

    def from_json(self, data: dict[str, str]) -> T_co: ...


to_json: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON for stored values (``json.dumps`` with options builds a new encoder per call)."""


if sys.version_info >= (3, 12):

    def utcnow() -> datetime:
        """Naive UTC, the representation of the schema's ``DateTime`` columns."""
        return datetime.now(UTC).replace(tzinfo=None)

else:
    utcnow = datetime.utcnow
    """Naive UTC, the representation of the schema's ``DateTime`` columns: not deprecated before 3.12, and a tenth
    of the cost of ``now(UTC).replace(tzinfo=None)`` (``replace`` parses its keywords; a message takes eight
    timestamps, an interrupt cycle twenty; measured: see bench/README.md, "Per-message micro-optimisations")."""


# -- jobs ------------------------------------------------------------------------------------------------------

T = TypeVar("T", bound=StoredTrigger)

Action = Literal["message", "prompt", "notice"]
"""``notice``: a fixed text sent once as it is (no ⏰), e.g. ``bot pair approve`` telling the person let in."""
LIVE = ("active", "paused")
"""Statuses that count towards the limits."""


@dataclass(frozen=True, slots=True)
class Job(Generic[T]):
    id: str
    chat_key: str
    owner: str
    """The account that made it (``channel:user_id``): its runs are that person's (budgets, confirmations)."""
    name: str
    trigger: T
    action: Action
    text: str
    agent: str | None
    status: str
    """``active``, ``paused``, ``done`` (a one-time job that fired) or ``deleted``."""
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    fires: int
    created_at: datetime


class JobLimit(Exception):
    """Too many jobs in the chat, or of the person; the message says which and how many."""


# -- memory, usage ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryHit:
    id: int
    text: str
    created_at: datetime
    source: str = ""
    score: float = 0.0


class MemoryFull(Exception):
    """The person has ``memory.max_items`` memories already."""


@dataclass(frozen=True, slots=True)
class Spent:
    """What one scope used in one period."""

    scope: str
    period: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Spent) -> Spent:
        return Spent(
            self.scope,
            self.period,
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.thinking_tokens + other.thinking_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cost + other.cost,
        )

    @property
    def tokens(self) -> int:
        """What a token budget counts: input and output (thinking and cached tokens are inside them)."""
        return self.input_tokens + self.output_tokens


# -- pairing ---------------------------------------------------------------------------------------------------

CODE_LENGTH = 8


def normal_code(text: str) -> str:
    """A code as stored, from how a person typed it (``abcd-efgh`` → ``ABCDEFGH``)."""
    return "".join(c for c in text.upper() if c.isalnum())


def shown_code(code: str) -> str:
    """A code as people read it: ``ABCD-EFGH``."""
    return f"{code[:4]}-{code[4:]}" if len(code) == CODE_LENGTH else code


@dataclass(frozen=True)
class WaitingCode:
    code: str
    channel: str
    user_id: str
    user_name: str
    chat_key: str
    created_at: datetime
    expires_at: datetime

    @property
    def account(self) -> str:
        return f"{self.channel}:{self.user_id}"


@dataclass(frozen=True)
class Paired:
    channel: str
    user_id: str
    user_name: str
    approved_by: str
    approved_at: datetime
    is_admin: bool = False

    @property
    def account(self) -> str:
        return f"{self.channel}:{self.user_id}"
