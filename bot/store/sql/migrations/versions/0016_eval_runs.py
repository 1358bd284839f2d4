"""Eval runs (``bot eval``): each run of a suite with its figures and its whole result as JSON, for the web
console's page of runs and pass rates over time.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("suite", sa.String(80), nullable=False),
        sa.Column("models", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cases", sa.Integer(), nullable=False),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("pass_rate", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_eval_runs_suite_started_at", "eval_runs", ["suite", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_eval_runs_suite_started_at", table_name="eval_runs")
    op.drop_table("eval_runs")
