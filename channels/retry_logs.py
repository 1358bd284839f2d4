"""A platform library's own reconnect loop, logged the way ours is: once per change, with a count.

slack-sdk's Socket Mode client and discord.py reconnect by themselves once connected, and log every try
(``Failed to connect …; Retrying...`` and ``Attempting a reconnect in 4.31s`` with a traceback each, every few
seconds while the network is down).  :class:`RetryLogs` sits on those loggers: a failing try goes to a
:class:`bot.retry.Outage` instead (a WARNING at the first failure or when the kind of failure changes, the
rest at DEBUG) and the library's "connected again" line closes the run with its count::

    discord: the gateway connection failed (connection refused); retrying every ≤60 s, quiet until it changes
    discord: connected again after 9 failed tries

The lines it recognises are the libraries' own texts (a test checks they are still in the installed versions).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from bot.retry import Outage

QUERY = re.compile(r"(\w+://[^\s?]+)\?[^\s)'\"]*")


def without_query(text: str) -> str:
    """URLs in ``text`` without their query (Slack's Socket Mode URL carries a connection ticket)."""
    return QUERY.sub(r"\1?…", text)


class RetryLogs(logging.Filter):
    def __init__(self, outage: Outage, failing: tuple[str, ...], working: tuple[str, ...]) -> None:
        super().__init__()
        self.outage = outage
        self.failing = failing
        """Texts that start a failed try's line (the line is dropped; the outage tells it)."""
        self.working = working
        """Texts of the line that says the connection is up again (kept, and the outage's count is told)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if message.startswith(self.failing):
            exc = record.exc_info[1] if record.exc_info and record.exc_info[1] is not None else None
            self.outage.failed(exc if exc is not None else ConnectionError(record.getMessage()))
            return False
        if self.outage.failures and any(text in message for text in self.working):
            self.outage.recovered("connected again")
        return True


def quiet_retries(
    loggers: tuple[str, ...],
    log: logging.Logger,
    what: str,
    *,
    failing: tuple[str, ...],
    working: tuple[str, ...],
    every_s: float,
    redact: Callable[[str], str] | None = None,
) -> RetryLogs:
    """Put one :class:`RetryLogs` on each of ``loggers`` (once: a second adapter reuses it) and return it."""
    for name in loggers:
        for existing in logging.getLogger(name).filters:
            if isinstance(existing, RetryLogs) and existing.outage.what == what:
                return existing
    found = RetryLogs(Outage(log, what, every_s, redact), failing, working)
    for name in loggers:
        logging.getLogger(name).addFilter(found)
    return found
