"""Trace events.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_events",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("correlation_id", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_trace_events_chat_key_created_at", "trace_events", ["chat_key", "created_at"])
    op.create_index("ix_trace_events_correlation_id", "trace_events", ["correlation_id"])
    op.create_index("ix_trace_events_created_at", "trace_events", ["created_at"])


def downgrade() -> None:
    op.drop_table("trace_events")
