"""Values the repositories and their callers share (:mod:`bot.store.ports`): kept apart so the ports and the SQL
implementations both import them without importing each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar


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
