"""Jobs: recurring work per chat (a trigger in a time zone, an action) and every fire of each, claimed.

A fire is claimed by a conditional update of the job's ``next_fire_at`` (from the due time to the next one)
in the transaction that records the fire and enqueues its action, so it happens once across restarts and
workers.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("trigger", sa.Text(), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("next_fire_at", sa.DateTime(), nullable=True),
        sa.Column("last_fire_at", sa.DateTime(), nullable=True),
        sa.Column("fires", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_jobs_chat_key", "jobs", ["chat_key"])
    op.create_index("ix_jobs_owner", "jobs", ["owner"])
    op.create_index("ix_jobs_status_next_fire_at", "jobs", ["status", "next_fire_at"])
    op.create_table(
        "job_fires",
        sa.Column("job_id", sa.String(16), primary_key=True),
        sa.Column("due_at", sa.DateTime(), primary_key=True),
        sa.Column("attempt", sa.Integer(), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("event_key", sa.String(255), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("retry_at", sa.DateTime(), nullable=True),
        sa.Column("fired_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_job_fires_status", "job_fires", ["status"])


def downgrade() -> None:
    op.drop_index("ix_job_fires_status", table_name="job_fires")
    op.drop_table("job_fires")
    op.drop_index("ix_jobs_status_next_fire_at", table_name="jobs")
    op.drop_index("ix_jobs_owner", table_name="jobs")
    op.drop_index("ix_jobs_chat_key", table_name="jobs")
    op.drop_table("jobs")
