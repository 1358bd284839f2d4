"""The correlation id of the request being handled, for log lines (``log.format: json`` writes it on each).

Set by the supervisor for an inbound event (its event key, which becomes the run's correlation id) and by
the run manager while a run works (so a resume after a button press logs under the request it continues).
A context variable: each chat's task carries its own.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType

CORRELATION: ContextVar[str] = ContextVar("correlation_id", default="")


class correlated:
    """Log lines inside carry ``correlation_id``.

    A class, not ``contextlib.contextmanager``: twice per message, and a generator-based context manager costs a
    generator and three calls more each time."""

    __slots__ = ("_id", "_token")

    def __init__(self, correlation_id: str) -> None:
        self._id = correlation_id

    def __enter__(self) -> None:
        self._token: Token[str] = CORRELATION.set(self._id)

    def __exit__(
        self, _type: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        CORRELATION.reset(self._token)
