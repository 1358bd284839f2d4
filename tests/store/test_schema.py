"""The schema's pieces agree: the SQL's table names, the migrations' head."""

from __future__ import annotations

from bot.store import ops
from bot.store.migrate import MIGRATIONS, head_revision
from bot.store.tables import ChatSetting, InboxEvent, SessionMessage


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
