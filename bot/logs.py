"""Logging set-up with a filter that keeps secrets out of every log line."""

from __future__ import annotations

import logging
from collections.abc import Iterable

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


def setup_logging(level: str, secrets: Iterable[str]) -> RedactingFilter:
    """Configure the root logger (stderr) and attach the redacting filter to every handler."""
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
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
