"""Persistence: one small interface, SQLite or PostgreSQL behind it."""

from bot.store.base import Store, StoreError
from bot.store.sql import SqlStore, open_store, store_from_settings

__all__ = ["SqlStore", "Store", "StoreError", "open_store", "store_from_settings"]
