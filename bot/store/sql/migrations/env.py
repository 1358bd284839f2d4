"""Alembic environment: migrations run on the connection the store hands over."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import bot.store.sql.tables  # noqa: F401  (registers the tables on the metadata)

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through bot.store.sql.migrate(), which provides the connection")
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
