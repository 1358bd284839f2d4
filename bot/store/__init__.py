"""Persistence as ports: the store's Protocols (:mod:`bot.store.ports`) and the values they carry, at the bottom of
the drawing; the SQL implementation (SQLite or PostgreSQL) is :mod:`bot.store.sql`, built by the composition root."""

from __future__ import annotations

from bot.store.base import Store, StoreError

__all__ = ["Store", "StoreError"]
