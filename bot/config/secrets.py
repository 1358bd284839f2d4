"""Secrets in the configuration: which keys and variables hold them, redaction, and the environment scrub."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from bot.config.channels import secret_variables

SECRET_KEYS = frozenset(
    {"token", "api_key", "bot_token", "app_token", "signing_secret", "secret_token", "password", "headers", "env"}
)

SECRET_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "DATABASE_URL")
"""Variables that hold secrets whatever their value (the manual names them: docs/configuration.md,
docs/agents/models.md), beside each channel's."""


def walk(data: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf of plain data with the keys leading to it."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(value, (*path, str(key)))
    elif isinstance(data, list):
        for value in data:
            yield from walk(value, path)
    else:
        yield path, data


def redact(data: Any, secret: bool = False) -> Any:
    """Plain data with the values under secret keys (and URL passwords) replaced by ``***``."""
    if isinstance(data, dict):
        return {k: redact(v, secret or k in SECRET_KEYS) for k, v in data.items()}
    if isinstance(data, list):
        return [redact(v, secret) for v in data]
    if secret and isinstance(data, str) and data:
        return "***"
    if isinstance(data, str) and "://" in data:
        return re.sub(r"(://[^:/@]*:)[^@]+@", r"\1***@", data)
    return data


def scrub_environment(secrets: Iterable[str], environ: dict[str, str] | None = None) -> list[str]:
    """Remove secrets from the process environment once the settings hold them; the names removed.

    Read once at start, they need not stay where every child process (an MCP server, a
    command) would inherit them: MCP servers get their configured ``env`` explicitly.
    """
    env = os.environ if environ is None else environ
    values = {v for v in secrets if len(v) >= 8}
    named = {*SECRET_VARIABLES, *secret_variables()}
    gone = [name for name, value in env.items() if name in named or (value and value in values)]
    for name in gone:
        env.pop(name, None)
    return sorted(gone)
