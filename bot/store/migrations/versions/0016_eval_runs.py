"""Eval runs (``bot eval``): each run of a suite with its figures and its whole result as JSON, for the web
console's page of runs and pass rates over time.

Revision 0015 was reserved for other work when this was written: this one follows it once it exists, else 0014
(replace the expression by "0015" when 0015 lands).

Revision ID: 0016
Revises: 0015 (or 0014 until 0015 exists)
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015" if any(Path(__file__).parent.glob("0015_*.py")) else "0014"
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
