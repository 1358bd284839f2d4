"""The tool ledger keeps each call's arguments: a run cut off by a crash is re-run, and a call it already made
with the same tool and arguments takes its recorded result instead of running twice; a call whose outcome is
unknown is named with its arguments.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_ledger") as batch:
        batch.add_column(sa.Column("args", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tool_ledger") as batch:
        batch.drop_column("args")
