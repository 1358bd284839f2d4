"""The one way to try something again: :func:`retry` calls until it works, waiting between tries on the clock it
is given (a test's :class:`~bot.clock.FakeClock` too); what is retried, after how long and when to give up is
the caller's (:class:`Backoff` for the usual doubling delays)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from bot.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")

DelayAfter = Callable[[Exception, int], float | None]
"""``(error, attempt)`` → seconds to wait before trying again, None when that error is not retried (it goes to
the caller); it may also raise an error of its own to give up with it.  ``attempt`` counts from 1."""


@dataclass(frozen=True)
class Backoff:
    """Delays that double from ``first_s`` up to ``cap_s``."""

    first_s: float = 1.0
    cap_s: float = 60.0
    factor: float = 2.0

    def delay(self, attempt: int) -> float:
        """The wait after failed try number ``attempt`` (1: ``first_s``)."""
        return min(self.cap_s, self.first_s * self.factor ** max(0, attempt - 1))

    def on(self, *errors: type[Exception]) -> DelayAfter:
        """Retry ``errors`` (and their subclasses) with these delays, nothing else."""
        return lambda exc, attempt: self.delay(attempt) if isinstance(exc, errors) else None


async def retry(
    call: Callable[[], Awaitable[T]],
    delay_after: DelayAfter,
    *,
    clock: Clock = SYSTEM_CLOCK,
    attempts: int | None = None,
    budget_s: float | None = None,
    on_retry: Callable[[Exception, int, float], None] | None = None,
) -> T:
    """``await call()``, again after each error ``delay_after`` retries, until it returns.

    Gives up, re-raising the last error, after ``attempts`` tries, or when the next wait would end more than
    ``budget_s`` after the first try began.  ``on_retry(error, attempt, delay)`` is told before each wait (to
    log it, or to tell someone once).  Cancellation is never retried.
    """
    began = clock.monotonic() if budget_s is not None else 0.0  # no clock read on a path without a budget
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as exc:
            delay = delay_after(exc, attempt)
            out_of_tries = attempts is not None and attempt >= attempts
            if delay is None or out_of_tries or (budget_s is not None and clock.monotonic() + delay - began > budget_s):
                raise
            if on_retry is not None:
                on_retry(exc, attempt, delay)
        await clock.sleep(delay)


def network_reason(exc: BaseException) -> tuple[str, str]:
    """``(kind, text)`` of a failure to reach a service: ``("DNS", "DNS: Name or service not known")``,
    ``("refused", "connection refused")``, ``("timeout", "timed out")``, else the error's type and first line.
    Read from the errors behind ``exc`` and, where a library kept only the text, from the text."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return "DNS", f"DNS: {seen.strerror or seen}"
        if isinstance(seen, ConnectionRefusedError):
            return "refused", "connection refused"
        if isinstance(seen, TimeoutError):
            return "timeout", "timed out"
        seen = seen.__cause__ or seen.__context__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    lowered = text.lower()
    for marker in _DNS_MARKERS:
        if marker in lowered:
            return "DNS", f"DNS: {marker}"
    if "connection refused" in lowered or "connect call failed" in lowered:
        return "refused", "connection refused"
    name = type(exc).__name__
    return name, (f"{name}: {text}"[:200] if text else name)


_DNS_MARKERS = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname provided",
    "no address associated with hostname",
    "getaddrinfo failed",
    "dnserror",
)


class Outage:
    """A run of failures told once, not at every try: a WARNING at the first failure (again only when the kind of
    failure changes), the tries after it at DEBUG, and one WARNING with the count when it works again.

        telegram: cannot reach api.telegram.org (DNS: …); retrying every ≤60 s, quiet until it changes
        telegram: reachable again after 14 failed tries
    """

    def __init__(
        self, log: logging.Logger, what: str, every_s: float, redact: Callable[[str], str] | None = None
    ) -> None:
        self.log = log
        self.redact = redact or (lambda text: text)
        """Applied to every error text logged (a client whose errors could hold its token)."""
        self.what = what
        """What failed, as the lines start: ``telegram: cannot reach api.telegram.org``."""
        self.every_s = every_s
        self.failures = 0
        self._kind: str | None = None

    def failed(self, exc: BaseException) -> None:
        kind, text = network_reason(exc)
        text = self.redact(text)
        self.failures += 1
        if kind != self._kind:
            self._kind = kind
            self.log.warning("%s (%s); retrying every ≤%.0f s, quiet until it changes", self.what, text, self.every_s)
        else:
            self.log.debug("%s (%s); try %d", self.what, text, self.failures)

    def recovered(self, now: str = "reachable again") -> None:
        if self.failures:
            self.log.warning("%s: %s after %d failed tries", self.what.split(":")[0], now, self.failures)
        self.failures, self._kind = 0, None
