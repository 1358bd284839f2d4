"""Fencing tokens of the bus partitions: a new owner raises the token before it handles anything; every write of
a partition's work checks it, so a worker whose lease lapsed while it still ran cannot commit.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "partition_fences",
        sa.Column("partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("token", sa.BigInteger(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("partition_fences")
