"""Logging set-up with a filter that keeps secrets out of every log line."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

REDACTED = "***"


class RedactingFilter(logging.Filter):
    """Replaces configured secret values in the formatted message and traceback."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(
    level: str, secrets: Iterable[str], *, file: Path | None = None, terminal_level: str | None = None
) -> RedactingFilter:
    """Configure the root logger and attach the redacting filter to every handler.

    Logs go to stderr; with ``file`` (the console channel is on: the terminal is the chat),
    everything at ``level`` goes to the file and the terminal shows only ``terminal_level``
    and above.
    """
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        written = logging.FileHandler(file, encoding="utf-8")
        written.setFormatter(logging.Formatter(FORMAT))
        written.setLevel(level)
        root.addHandler(written)
    if terminal_level is not None:
        for handler in root.handlers:
            if type(handler) is logging.StreamHandler:
                handler.setLevel(terminal_level)
    root.setLevel(level)
    redactor = RedactingFilter(secrets)
    for handler in root.handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(redactor)
    # Third-party clients log request URLs and headers at DEBUG; keep them at INFO or above.
    for noisy in ("httpx", "httpcore", "aiosqlite", "asyncio", "google_genai"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.INFO))
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return redactor
