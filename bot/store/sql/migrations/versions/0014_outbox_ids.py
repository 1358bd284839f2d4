"""Outbox ids are never reused (SQLite ``AUTOINCREMENT``): the sent journal (bot/store/sql/sent_journal.py) names the
entries a process sent by id, and a sent row is deleted, so without it the next entry would get the same id (an
empty outbox hands out 1 again and again) and a restart could take a new entry for one already sent.
PostgreSQL's sequence never reuses ids: nothing to do there.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # The table is copied into one declared with AUTOINCREMENT (SQLite cannot alter that in place); ids go on
    # from the highest one there.
    with op.batch_alter_table("outbox", recreate="always", table_kwargs={"sqlite_autoincrement": True}):
        pass


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("outbox", recreate="always", table_kwargs={"sqlite_autoincrement": False}):
        pass
