"""The correlation id of the request being handled, for log lines (``log.format: json`` writes it on each).

Set by the supervisor for an inbound event (its event key, which becomes the run's correlation id) and by
the run manager while a run works (so a resume after a button press logs under the request it continues).
A context variable: each chat's task carries its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

CORRELATION: ContextVar[str] = ContextVar("correlation_id", default="")


@contextlib.contextmanager
def correlated(correlation_id: str) -> Iterator[None]:
    """Log lines inside carry ``correlation_id``."""
    token = CORRELATION.set(correlation_id)
    try:
        yield
    finally:
        CORRELATION.reset(token)
