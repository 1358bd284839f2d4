"""Pairing: the one-time codes unknown senders are given (one per sender, expiring) and the senders an admin let in
with ``/pair CODE`` (allowed like ``allow_from`` until ``/unpair``).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pairing_codes",
        sa.Column("code", sa.String(16), primary_key=True),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("user_name", sa.String(255), nullable=False),
        sa.Column("chat_key", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_pairing_codes_sender", "pairing_codes", ["channel", "user_id"], unique=True)
    op.create_index("ix_pairing_codes_expires_at", "pairing_codes", ["expires_at"])
    op.create_table(
        "paired_senders",
        sa.Column("channel", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(255), primary_key=True),
        sa.Column("user_name", sa.String(255), nullable=False),
        sa.Column("approved_by", sa.String(255), nullable=False),
        sa.Column("approved_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("paired_senders")
    op.drop_index("ix_pairing_codes_expires_at", table_name="pairing_codes")
    op.drop_index("ix_pairing_codes_sender", table_name="pairing_codes")
    op.drop_table("pairing_codes")
