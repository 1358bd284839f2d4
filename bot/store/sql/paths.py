"""Where a SQLite store's file is, checked before it is opened (clear errors instead of sqlite3's)."""

from __future__ import annotations

import os
from pathlib import Path

from bot.store.base import StoreError


def sqlite_file(path: str, *, read_only: bool) -> str:
    """The database file at ``path`` (from ``store.url``), its folder made if need be; :class:`StoreError` saying
    what to change when it cannot be used."""
    file = Path(path).expanduser()
    if read_only:
        if not file.is_file():
            raise StoreError(f"there is no database at {file} (store.data_dir / store.url point there)")
        return str(file)
    where = f"the database's folder {file.parent} (store.data_dir, or the folder in store.url)"
    if file.parent.exists() and not file.parent.is_dir():
        raise StoreError(f"{where} is a file, not a folder")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{where} cannot be created: {exc.strerror}") from None
    if not os.access(file.parent, os.W_OK) or (file.exists() and not os.access(file, os.W_OK)):
        raise StoreError(f"{where} is not writable by this user (uid {os.getuid()})")
    return str(file)
