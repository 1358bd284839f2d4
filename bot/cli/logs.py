"""Logging set-up: a filter that keeps secrets out of every log line, the correlation id of the request being
handled on each record, and ``log.format: json`` (one JSON object per line).  A log line can carry what someone
wrote (a file name, a platform's error): its control characters are shown, not obeyed by the terminal that
shows the line or the log file (:func:`channels.terminal.terminal_safe`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from bot.redaction import redact_text
from bot.tracing.context import CORRELATION
from channels.terminal import terminal_safe

REDACTED = "***"


class RedactingFilter(logging.Filter):
    """Replaces configured secret values in the formatted message and traceback, then what the detector finds
    (a token in a URL a library logged, a password in an error it quoted: :func:`bot.redaction.redact_text`)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact_text(text)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class CorrelationFilter(logging.Filter):
    """Puts the correlation id of the request being handled (or '') on every record as ``correlation_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = CORRELATION.get()
        return True


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", "correlation_id"[, "exception"]}`` on one line. The correlation id
    is the trace id of ``/trace`` and ``bot trace``: null outside a request (start-up, timers)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "correlation_id": getattr(record, "correlation_id", "") or None,
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        return terminal_safe(json.dumps(out, ensure_ascii=False))  # still JSON: only characters inside strings


class TextFormatter(logging.Formatter):
    """:data:`FORMAT`, with control characters shown (line breaks of a traceback stay)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))


def formatter(kind: str) -> logging.Formatter:
    return JsonFormatter() if kind == "json" else TextFormatter(FORMAT)


def setup_logging(
    level: str,
    secrets: Iterable[str],
    *,
    file: Path | None = None,
    terminal_level: str | None = None,
    format: str = "text",
) -> RedactingFilter:
    """Configure the root logger and attach the redacting filter to every handler.

    Logs go to stderr; with ``file`` (the console channel is on: the terminal is the chat),
    everything at ``level`` goes to the file and the terminal shows only ``terminal_level``
    and above.
    """
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler = logging.StreamHandler()
        root.addHandler(handler)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        written = logging.FileHandler(file, encoding="utf-8")
        written.setLevel(level)
        root.addHandler(written)
    if terminal_level is not None:
        for handler in root.handlers:
            if type(handler) is logging.StreamHandler:
                handler.setLevel(terminal_level)
    root.setLevel(level)
    redactor = RedactingFilter(secrets)
    for handler in root.handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter | CorrelationFilter)]:
            handler.removeFilter(old)
        handler.addFilter(CorrelationFilter())
        handler.addFilter(redactor)
        if type(handler) in (logging.StreamHandler, logging.FileHandler):  # not pytest's capturing handlers
            handler.setFormatter(formatter(format))
    # Third-party clients log request URLs and headers at DEBUG; keep them at INFO or above.
    for noisy in ("httpx", "httpcore", "aiosqlite", "asyncio", "google_genai"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.INFO))
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return redactor
