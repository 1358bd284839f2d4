"""Admins let in by pairing: ``bot pair approve CODE --admin`` (the first admin of a bot set up without one) marks
the paired sender an admin, as one in ``channels.<name>.admins`` is.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("paired_senders") as batch:
        batch.add_column(sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.text("false")))


def downgrade() -> None:
    with op.batch_alter_table("paired_senders") as batch:
        batch.drop_column("is_admin")
