"""Usage: model tokens and estimated cost per scope (a person's account, a chat) and period (a day, a month),
for budgets and ``/usage``.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "usage",
        sa.Column("scope", sa.String(255), primary_key=True),
        sa.Column("period", sa.String(16), primary_key=True),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("thinking_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_usage_period", "usage", ["period"])


def downgrade() -> None:
    op.drop_index("ix_usage_period", table_name="usage")
    op.drop_table("usage")
