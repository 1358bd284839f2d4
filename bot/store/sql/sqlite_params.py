"""How Python values are bound on SQLite: the adapters sqlite3 calls for parameters it does not bind itself.

sqlite3 has adapters only per process; :mod:`bot.store.sql.sqlite` registers these once (:func:`register_adapters`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import cast

_last_datetime: tuple[datetime, str] = (datetime.min, "0001-01-01 00:00:00.000000")
"""The last datetime adapted and its text: a write binds the same one twice or more (a run's ``created_at`` and
``updated_at``, a message's and its event's time), and ``isoformat`` costs more than the comparison (measured: see
bench/README.md, "Per-message micro-optimisations").  A tuple swapped whole: threads may share it."""


def sqlite_datetime(value: datetime) -> str:
    """A datetime in the text form SQLAlchemy uses for DateTime on SQLite (``%Y-%m-%d %H:%M:%S.%f``), so both read
    the same rows and text order is time order; an aware one as its naive UTC wall time."""
    # ``isoformat`` is about ten times faster than ``strftime``, and as an adapter it runs inside sqlite3's C
    # binding, with no per-parameter Python loop.
    global _last_datetime
    last = _last_datetime
    if value is last[0]:
        return last[1]
    text = (value if value.tzinfo is None else value.replace(tzinfo=None)).isoformat(" ")
    if not value.microsecond:
        text += ".000000"
    _last_datetime = (value, text)
    return text


def register_adapters() -> None:
    """Datetimes as :func:`sqlite_datetime` (replacing the default adapter deprecated since Python 3.12, with the
    same text form plus fixed microseconds, so text order is time order); None and bools as before (NULL, 0/1).

    sqlite3 looks for an adapter for every parameter that is not exactly a str, int, float or bytearray, and one it
    does not find costs a failed attribute lookup on its protocol, and a message binds five None or bools
    (measured: see bench/README.md, "Per-message micro-optimisations").
    ``{}.get`` maps None to None as a C function (a Python one costs more than the search it spares).
    """
    sqlite3.register_adapter(datetime, sqlite_datetime)
    sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))
    sqlite3.register_adapter(bool, int)
