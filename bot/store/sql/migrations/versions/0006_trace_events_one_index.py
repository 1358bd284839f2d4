"""Trace events keep one index, (chat_key, correlation_id), instead of four.

Every event was an insert into the table and four indexes (the unique ``id``,
``correlation_id``, ``created_at``, ``(chat_key, created_at)``): much of the
loop's time per event and most of the pages each commit wrote (measured: see
bench/README.md, "The schema").  Reads go
by chat and correlation id; time order is ``seq`` (events are written in the
order they happen), and retention deletes a prefix of ``seq``.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = "seq, id, chat_key, correlation_id, run_id, agent, type, data, created_at"


def _table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("correlation_id", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )


def _move(source: str, target: str) -> None:
    op.execute(f"INSERT INTO {target} ({COLUMNS}) SELECT {COLUMNS} FROM {source} ORDER BY seq")
    op.drop_table(source)
    op.rename_table(target, "trace_events")
    if op.get_bind().dialect.name == "postgresql":
        # Copied rows kept their seq: the identity sequence continues after them.
        op.execute(
            "SELECT setval(pg_get_serial_sequence('trace_events', 'seq'), "
            "COALESCE((SELECT MAX(seq) FROM trace_events), 0) + 1, false)"
        )


def upgrade() -> None:
    _table("trace_events_new")
    _move("trace_events", "trace_events_new")
    op.create_index("ix_trace_events_chat_key_correlation_id", "trace_events", ["chat_key", "correlation_id"])


def downgrade() -> None:
    _table("trace_events_old")
    _move("trace_events", "trace_events_old")
    op.create_index("ix_trace_events_chat_key_created_at", "trace_events", ["chat_key", "created_at"])
    op.create_index("ix_trace_events_correlation_id", "trace_events", ["correlation_id"])
    op.create_index("ix_trace_events_created_at", "trace_events", ["created_at"])
    op.create_index("ix_trace_events_id", "trace_events", ["id"], unique=True)
