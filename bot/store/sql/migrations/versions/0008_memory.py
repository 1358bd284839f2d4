"""Memory: what the bot remembers about people, linked accounts, chat summaries, session keys; ``runs.direct``.

Full-text search differs by database: SQLite gets the FTS5 table ``memory_index`` (porter stemming,
unicode61; CJK through the ``grams`` column) kept equal to ``memories`` by triggers, so a deleted memory
leaves the index in the same statement; PostgreSQL a stored generated ``tsvector`` column ``search`` of the
same text with a GIN index (stored, so ranking and filtering a person's rows do not parse each text again, which
made recall several times faster; measured: see bench/README.md, "The schema").

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SEARCH = "to_tsvector('english', text || ' ' || grams)"
"""What PostgreSQL searches: the ``search`` column's expression."""

SQLITE_INDEX = (
    "CREATE VIRTUAL TABLE memory_index USING fts5(owner, text, grams, "
    "tokenize = 'porter unicode61 remove_diacritics 2')",
    # owner: one token per person ('p' and the hex of its id), so a search reads only that person's entries.
    "CREATE TRIGGER memories_indexed AFTER INSERT ON memories BEGIN "
    "INSERT INTO memory_index (rowid, owner, text, grams) "
    "VALUES (new.id, 'p' || hex(new.person), new.text, new.grams); END",
    "CREATE TRIGGER memories_unindexed AFTER DELETE ON memories BEGIN "
    "DELETE FROM memory_index WHERE rowid = old.id; END",
    "CREATE TRIGGER memories_reindexed AFTER UPDATE ON memories BEGIN "
    "UPDATE memory_index SET owner = 'p' || hex(new.person), text = new.text, grams = new.grams "
    "WHERE rowid = old.id; END",
)


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("direct", sa.Boolean(), nullable=False, server_default=sa.text("false")))
    op.create_table(
        "memories",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("person", sa.String(255), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("grams", sa.Text(), nullable=False),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_memories_person_id", "memories", ["person", "id"])
    op.create_table(
        "memory_vectors",
        sa.Column("memory_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("person", sa.String(255), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("vector", sa.Text(), nullable=False),
    )
    op.create_index("ix_memory_vectors_person", "memory_vectors", ["person"])
    op.create_table(
        "identities",
        sa.Column("identity", sa.String(255), primary_key=True),
        sa.Column("person", sa.String(255), nullable=False),
        sa.Column("linked_by", sa.String(255), nullable=False),
        sa.Column("linked_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_identities_person", "identities", ["person"])
    op.create_table(
        "link_codes",
        sa.Column("code", sa.String(32), primary_key=True),
        sa.Column("identity", sa.String(255), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "chat_summaries",
        sa.Column("chat_key", sa.String(255), primary_key=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("upto_id", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "session_memory",
        sa.Column("chat_key", sa.String(255), primary_key=True),
        sa.Column("agent", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    if op.get_context().dialect.name == "sqlite":
        for statement in SQLITE_INDEX:
            op.execute(statement)
    else:
        op.execute(f"ALTER TABLE memories ADD COLUMN search tsvector GENERATED ALWAYS AS ({SEARCH}) STORED")
        op.execute("CREATE INDEX ix_memories_search ON memories USING GIN (search)")


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for name in ("memories_indexed", "memories_unindexed", "memories_reindexed"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS memory_index")
    for table in ("session_memory", "chat_summaries", "link_codes", "identities", "memory_vectors", "memories"):
        op.drop_table(table)
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("direct")
