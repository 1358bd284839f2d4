"""Initial schema: session messages, chat settings, processed events.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_messages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_session_messages_chat_key", "session_messages", ["chat_key"])
    op.create_table(
        "chat_settings",
        sa.Column("settings_key", sa.String(255), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "processed_events",
        sa.Column("event_key", sa.String(255), primary_key=True),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_processed_events_seen_at", "processed_events", ["seen_at"])


def downgrade() -> None:
    op.drop_table("processed_events")
    op.drop_table("chat_settings")
    op.drop_table("session_messages")
