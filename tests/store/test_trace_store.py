"""Trace events in the store (SQLite and PostgreSQL): the 0006 migration keeps them; retention by age."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bot.config.settings import TracingSection
from bot.store.sql.migrate import MIGRATIONS, async_url
from bot.store.sql.ops import Step, utcnow
from bot.store.sql.repos.traces import INSERT_HEAD, ROW, SqlTraces, sqlite_now
from bot.store.sql.sqlite_params import sqlite_datetime as _sqlite_datetime
from bot.tracing.recorder import Tracing


async def _upgrade_to(url: str, revision: str) -> None:
    def run(connection: Any) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    engine = create_async_engine(async_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(run)
    finally:
        await engine.dispose()


def _row(n: int, correlation: str, at: Any, chat: str = "console:c") -> tuple[Any, ...]:
    return (f"e{n}", chat, correlation, "run", "react", "llm_call", "{}", at)


async def test_events_written_before_the_one_index_migration_are_kept(db_url: str, make_store: Any) -> None:
    await _upgrade_to(db_url, "0005")
    engine = create_async_engine(async_url(db_url))
    try:
        async with engine.begin() as conn:
            for n in range(3):
                await conn.execute(
                    text(
                        "INSERT INTO trace_events (id, chat_key, correlation_id, run_id, agent, type, data, "
                        "created_at) VALUES (:id, 'console:c', 'm1', 'run', 'react', 'route', '{}', :at)"
                    ),
                    {"id": f"old{n}", "at": utcnow()},
                )
    finally:
        await engine.dispose()
    store = await make_store()  # migrates to head
    tracing = Tracing(SqlTraces(store), TracingSection())
    tracing.record("run", "console:c", "m1", run_id="run", agent="react", status="done")
    await tracing.flush()
    events = await tracing.events("m1", "console:c")
    assert [e.id for e in events][:3] == ["old0", "old1", "old2"]  # kept, in order, before the new one
    assert [e.type for e in events] == ["route", "route", "route", "run"]
    assert [e.correlation_id for e in (await tracing.runs("console:c"))[0]] == ["m1"] * 4


async def test_retention_drops_events_older_than_the_configured_days(make_store: Any) -> None:
    store = await make_store(retention_interval_s=3600)
    tracing = Tracing(SqlTraces(store), TracingSection(retention_days=1))
    await tracing.start()
    try:
        old, recent = utcnow() - timedelta(days=2), utcnow() - timedelta(hours=1)
        rows = [_row(0, "m-old", old), _row(1, "m-old", old), _row(2, "m-new", recent)]
        await store.write([Step(INSERT_HEAD + ", ".join([ROW] * 3), tuple(v for r in rows for v in r))])
        tracing.record("run", "console:c", "m-now", run_id="run", agent="react", status="done")
        await tracing.flush()
        await store.prune()
        kept = [[e.id for e in run] for run in await tracing.runs("console:c", last=5)]
        assert kept[0] == ["e2"] and len(kept) == 2 and kept[1][0] != "e0"
        assert await tracing.events("m-old") == []
    finally:
        await tracing.stop()


async def test_an_events_time_is_stored_as_each_store_writes_times(make_store: Any) -> None:
    """SQLite gets the time as the text its ``datetime`` adapter writes (made without a ``datetime``), PostgreSQL
    a ``datetime``; read back, both are the time the event was kept."""
    store = await make_store()
    traces = SqlTraces(store)
    tracing = Tracing(traces, TracingSection())
    before = utcnow()
    stamps = [traces.stamp() for _ in range(3)]
    tracing.record("run", "console:c", "m1", run_id="run", agent="react", status="done")
    after = utcnow()
    await tracing.flush()
    if store.many_rows:
        assert all(isinstance(s, str) and _sqlite_datetime(datetime.fromisoformat(s)) == s for s in stamps)
        [(stored,)] = await store.read("SELECT created_at FROM trace_events")
        assert isinstance(stored, str) and _sqlite_datetime(datetime.fromisoformat(stored)) == stored
    else:
        assert all(isinstance(s, datetime) for s in stamps)
    [event] = await tracing.events("m1")
    assert before <= event.at.replace(tzinfo=None) <= after


def test_the_sqlite_time_text_is_the_adapters_at_every_microsecond() -> None:
    for _ in range(200):  # across microseconds
        stamp = sqlite_now()
        assert _sqlite_datetime(datetime.fromisoformat(stamp)) == stamp and len(stamp) == 26
    for when in (datetime(2026, 1, 2, 3, 4, 5), datetime(2026, 1, 2, 3, 4, 5, 6)):  # what it makes of any time
        assert when.isoformat(" ", "microseconds") == _sqlite_datetime(when)
