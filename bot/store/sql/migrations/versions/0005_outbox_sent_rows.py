"""The outbox keeps only unsent entries: sent ones are removed (earlier versions marked them and kept them).

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM outbox WHERE status = 'sent'")


def downgrade() -> None:
    pass  # sent entries are gone; nothing reads them
