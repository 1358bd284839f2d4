"""Audit log, runs and checkpoints, interrupts, the tool ledger and the outbox.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("scope", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("old", sa.Text(), nullable=True),
        sa.Column("new", sa.Text(), nullable=True),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("correlation_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("reply_to", sa.String(255), nullable=True),
        sa.Column("history_cutoff", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("checkpoint", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_runs_chat_key", "runs", ["chat_key"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_table(
        "interrupts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("choices", sa.Text(), nullable=False),
        sa.Column("nonce", sa.String(16), nullable=False),
        sa.Column("requester", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.Column("resolved_by", sa.String(255), nullable=True),
        sa.Column("prompt_ref", sa.String(255), nullable=True),
        sa.Column("reprompted", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("resolved_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_interrupts_chat_key", "interrupts", ["chat_key"])
    # The store's rule "at most one pending interrupt per chat key".
    op.create_index(
        "ux_interrupts_one_pending",
        "interrupts",
        ["chat_key"],
        unique=True,
        sqlite_where=PENDING,
        postgresql_where=PENDING,
    )
    op.create_table(
        "tool_ledger",
        sa.Column("run_id", sa.String(32), primary_key=True),
        sa.Column("call_id", sa.String(128), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("interrupt_id", sa.String(32), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_outbox_status", "outbox", ["status"])


def downgrade() -> None:
    for table in ("outbox", "tool_ledger", "interrupts", "runs", "audit_log"):
        op.drop_table(table)
