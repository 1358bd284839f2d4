"""Checks that turn a silent mistake in the configuration into a clear error or warning.

- ``${VAR}`` of a variable that is not set is an error naming the file and field (an
  empty value would hide a missing token or URL); ``${VAR:-default}`` says it may be unset.
- A secret (a token, key or signing secret) written literally in a file is a warning at
  start-up: secrets belong in the environment.
- ``store.url`` must be a database the store can use: ``sqlite:///path`` (or
  ``sqlite:///:memory:`` for a throw-away one) or ``postgresql://…``; anything else
  (``sqlite://mydb.db``, ``mysql://…``) is an error naming the layer it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
URL_FORMS = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db, sqlite:///:memory: (throw-away), "
    "or postgresql://user:password@host:5432/database"
)


def interpolate(value: Any, env: Mapping[str, str], problems: list[str], where: str = "", path: str = "") -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string; an unset ``${VAR}`` adds to ``problems`` a line
    naming the layer ``where`` and the field's dotted ``path`` (``project file config/bot.yaml:
    channels.telegram.token: ${TELEGRAM_BOT_TOKEN} is not set``)."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if default is not None:  # ${VAR:-default}: unset or empty takes the default (as in a shell)
                return env.get(name) or default
            if name in env:
                return env[name]
            field = f"{path}: " if path else ""
            problems.append(f"{where}: {field}${{{name}}} is not set (write ${{{name}:-}} if it may be empty)")
            return ""

        return VAR.sub(sub, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env, problems, where, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, problems, where, path) for v in value]
    return value


def literal_secrets(data: Any, secret_keys: frozenset[str], path: str = "") -> list[str]:
    """Dotted keys under which ``data`` (a file's raw YAML) holds a secret written out instead of ``${VAR}``."""
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            dotted = f"{path}.{key}" if path else str(key)
            if str(key) in secret_keys and _written_out(value):
                found.append(dotted)
            else:
                found.extend(literal_secrets(value, secret_keys, dotted))
    return found


def _written_out(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip()) and "${" not in value
    if isinstance(value, dict):
        return any(_written_out(v) for v in value.values())
    return False


def store_url_problem(url: str | None) -> str | None:
    """Why ``url`` cannot be the store's database, or None."""
    if url is None:
        return None
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme.startswith("postgres"):
        if not re.match(r"^postgres(?:ql)?(?:\+asyncpg)?://[^/]", url):
            return f"{url!r} is not a PostgreSQL URL I can use; use {URL_FORMS}"
        return None
    if scheme in ("sqlite", "sqlite+aiosqlite"):
        if "://" not in url or not url.split("://", 1)[1].startswith("/"):
            return f"{url!r} names no file (a SQLite URL has three slashes before a relative path); use {URL_FORMS}"
        if not url.split(":///", 1)[1]:
            return f"{url!r} names no file; use {URL_FORMS}"
        return None
    return f"{url!r} is not a database this bot can use (SQLite or PostgreSQL); use {URL_FORMS}"


def bus_url_problem(url: str | None, store_url: str | None) -> str | None:
    """Why ``url`` cannot be the bus (with this store), or None."""
    if url is None:
        return None
    if not re.match(r"^rediss?://[^/]", url) and not url.startswith("unix://"):
        return f"{url!r} is not a Redis URL; use redis://host:6379/0 (rediss:// for TLS)"
    if store_url is None or not store_url.split(":", 1)[0].lower().startswith("postgres"):
        return (
            "several processes share one database, and SQLite is one process's file: "
            "set store.url (or DATABASE_URL) to postgresql://user:password@host:5432/dbname"
        )
    return None


def iana_zone(value: str) -> str:
    """``value`` when it names a time zone (``Europe/Berlin``, ``UTC``), else a ValueError saying so."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r} (an IANA name such as Europe/Berlin)") from None
    return value
