"""The inbox: inbound events committed before they are acknowledged, replacing ``processed_events``.

An event is stored (``pending``) before the platform hears "received", and marked
``done`` in the same transaction as whatever handling it did; recovery takes up the
``pending`` rows.  The ids of ``processed_events`` move over as ``done`` rows, so
de-duplication holds across the upgrade.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inbox",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("event_key", sa.String(255), nullable=False),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("event_key", name="uq_inbox_event_key"),
    )
    op.execute(
        "INSERT INTO inbox (event_key, chat_key, kind, event, status, received_at) "
        "SELECT event_key, '', '', '', 'done', seen_at FROM processed_events ORDER BY seen_at"
    )
    op.drop_table("processed_events")


def downgrade() -> None:
    op.create_table(
        "processed_events",
        sa.Column("event_key", sa.String(255), primary_key=True),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_processed_events_seen_at", "processed_events", ["seen_at"])
    op.execute("INSERT INTO processed_events (event_key, seen_at) SELECT event_key, received_at FROM inbox")
    op.drop_table("inbox")
