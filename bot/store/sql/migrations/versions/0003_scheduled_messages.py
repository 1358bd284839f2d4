"""Scheduled messages.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduled_messages",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("due_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_scheduled_messages_chat_key", "scheduled_messages", ["chat_key"])
    op.create_index("ix_scheduled_messages_due_at", "scheduled_messages", ["due_at"])


def downgrade() -> None:
    op.drop_table("scheduled_messages")
