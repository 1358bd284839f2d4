"""The schema's pieces agree: the SQL's table names, the migrations' head."""

from __future__ import annotations

from bot.store.sql import ops
from bot.store.sql.migrate import MIGRATIONS, head_revision
from bot.store.sql.tables import ChatSetting, InboxEvent, SessionMessage


def test_the_sql_names_the_tables_of_the_schema() -> None:
    assert (
        SessionMessage.__tablename__,
        ChatSetting.__tablename__,
        InboxEvent.__tablename__,
    ) == (ops._M, ops._S, ops._E)


def test_the_head_read_from_file_names_is_alembics_head() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == head_revision()


def test_the_repositories_name_tables_and_columns_of_the_schema() -> None:
    """Every table the store's SQL names is one of ``tables.py`` (or a known non-model one), and the places
    forgetting rewrites are columns of their tables."""
    import ast
    import re
    from pathlib import Path

    from sqlmodel import SQLModel

    from bot.store.sql.repos.scrub import KEYS, PLACES

    tables = SQLModel.metadata.tables
    outside_the_models = {"memory_index", "alembic_version", "sqlite_master", "me", "unnest", "x"}
    outside_the_models |= {"pg_class", "pg_constraint", "pg_rules", "pg_trigger", "answers"}
    """The full-text index (a migration's), Alembic's and SQLite's own tables, a CTE, a PostgreSQL function, what
    an f-string's placeholders read as here, PostgreSQL's catalogs (the writer's look at triggers and keys), and the
    eval response cache's table (``answers``: a file of its own,
    :mod:`bot.store.sql.repos.eval_answers`, not the database)."""
    named: dict[str, set[str]] = {}
    for path in sorted((Path(__file__).resolve().parents[2] / "bot" / "store").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(str(v.value) if isinstance(v, ast.Constant) else " x " for v in node.values)
            else:
                continue
            for name in re.findall(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+([a-z_]+)\b", text):
                named.setdefault(name, set()).add(path.name)
    assert {n: f for n, f in named.items() if n not in tables and n not in outside_the_models} == {}
    for place, columns in PLACES.items():
        assert {*columns, *KEYS[place]} <= set(tables[place].columns.keys()), place
