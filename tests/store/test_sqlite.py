"""SQLite specifics: pragmas, durability across SIGKILL, a full disk."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.messages import Message
from bot.store import StoreError
from bot.store.sql.ops import Step
from bot.store.sql.store import SqlStore
from tests.waiting import CEILING_S

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]


async def _pragma(store: SqlStore, name: str) -> object:
    # Pragmas are per connection: ask the writer's own connection.
    return (await store.write([Step(f"PRAGMA {name}", returning=True)])).rows[0][0]


async def test_wal_and_synchronous_full_by_default(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    try:
        assert await _pragma(store, "journal_mode") == "wal"
        assert await _pragma(store, "synchronous") == 2  # FULL
        assert await _pragma(store, "busy_timeout") == 5000
    finally:
        await store.close()


async def test_synchronous_is_configurable(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", synchronous="normal", busy_timeout_ms=250)
    await store.start()
    try:
        assert await _pragma(store, "synchronous") == 1
        assert await _pragma(store, "busy_timeout") == 250
    finally:
        await store.close()


async def test_memory_url_uses_a_private_file_removed_on_close() -> None:
    store = SqlStore("sqlite:///:memory:")
    await store.start()
    assert await store.accept("e", "c", Message.user("hi"))
    assert [m.text for m in await store.history("c")] == ["hi"]
    tempdir = store._tempdir
    assert tempdir is not None and Path(tempdir).exists()
    await store.close()
    assert not Path(tempdir).exists()


async def test_full_disk_fails_the_batch_and_leaves_caches_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    store = SqlStore(url)
    await store.start()
    try:
        await store.append("c", [Message.user("kept")])
        await store.history("c")
        # The database may not grow past its current size: the next pages "fill the disk".
        await store.write([Step("PRAGMA max_page_count = 1", returning=True)])
        outcomes = await asyncio.gather(
            *(store.append("c", [Message.user("x" * 4000)]) for _ in range(20)), return_exceptions=True
        )
        failures = [o for o in outcomes if isinstance(o, StoreError)]
        assert failures and "full" in str(failures[0])
        kept = await store.history("c")
    finally:
        await store.close()
    cold = SqlStore(url)
    await cold.start()
    try:
        assert await cold.history("c") == kept
        assert len(kept) == 1 + len(outcomes) - len(failures)
    finally:
        await cold.close()


def test_sigkill_right_after_commits_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_crash_writer.py")), str(db)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert child.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 30
    try:
        # Kill while 20 chats write continuously, right after some batch committed.
        while sum(1 for line in lines if line.startswith("event")) < 400 and time.monotonic() < deadline:
            line = child.stdout.readline().decode()
            if not line:
                break
            lines.append(line)
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read().decode()
    finally:
        child.kill()
        child.wait(10)
    lines += [line for line in rest.splitlines(keepends=True) if line.endswith("\n")]
    events = [line.split()[1] for line in lines if line.startswith("event ")]
    replies = [tuple(line.split()[1:3]) for line in lines if line.startswith("reply ")]
    assert len(events) >= 400, "the child did not write enough before the deadline"

    conn = sqlite3.connect(db)
    stored_events = {row[0] for row in conn.execute("SELECT event_key FROM inbox")}
    stored = {
        (chat, json.loads(data)["text"]) for chat, data in conn.execute("SELECT chat_key, data FROM session_messages")
    }
    conn.close()
    assert set(events) <= stored_events
    assert {(f"chat:{key.split('-')[1]}", key) for key in events} <= stored
    assert set(replies) <= stored


def test_datetimes_are_stored_in_sqlalchemys_text_form() -> None:
    from datetime import UTC, datetime

    from bot.store.sql.sqlite_params import sqlite_datetime

    form = "%Y-%m-%d %H:%M:%S.%f"
    for value in (datetime(2026, 11, 23, 14, 5, 9, 120034), datetime(2026, 1, 2, 3, 4, 5)):
        assert sqlite_datetime(value) == value.strftime(form)
        assert sqlite_datetime(value) == value.strftime(form)  # the same one again (remembered)
    aware = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert sqlite_datetime(aware) == aware.strftime(form)
    conn = sqlite3.connect(":memory:")
    same = datetime(2026, 1, 2, 3, 4, 5)
    row = conn.execute("SELECT ?, ?, ?", (same, same, datetime(2026, 1, 2, 3, 4, 6, 7))).fetchone()
    assert row == ("2026-01-02 03:04:05.000000", "2026-01-02 03:04:05.000000", "2026-01-02 03:04:06.000007")


def test_none_and_bools_are_bound_as_null_and_integers() -> None:
    import bot.store.sql.sqlite  # noqa: F401  (registers the adapters)

    conn = sqlite3.connect(":memory:")
    row = conn.execute("SELECT ?, typeof(?), ?, typeof(?), ?", (None, None, True, True, False)).fetchone()
    assert row == (None, "null", 1, "integer", 0)


async def test_single_row_inserts_hand_back_the_ids_returning_would(tmp_path: Path) -> None:
    """The writer runs these inserts without RETURNING and hands back ``lastrowid``: the new rows' ids."""
    from bot.store.sql.ops import INSERT_MESSAGE, ROWID_INSERTS, outbox_step, utcnow

    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    try:
        await store.append("other", [Message.user("a"), Message.user("b")])  # the tables' ids differ
        now = utcnow()
        message = Step(INSERT_MESSAGE, ("c", "user", None, "{}", now), returning=True)
        result = await store.write([message, outbox_step("c", "{}", None, now), message])
        assert result.counts == [1, 1, 1]
        messages = await store.read("SELECT id FROM session_messages WHERE chat_key = 'c' ORDER BY id")
        outbox = await store.read("SELECT id FROM outbox")
        assert result.rows == [messages[0], outbox[0], messages[1]]
        assert messages[0][0] != outbox[0][0]
    finally:
        await store.close()
    # Plain inserts of one row into a table whose id is its rowid, with no trigger (lastrowid would be another row).
    conn = sqlite3.connect(tmp_path / "bot.db")
    for sql, bare in ROWID_INSERTS.items():
        assert sql == bare + " RETURNING id" and bare.startswith("INSERT INTO ") and "ON CONFLICT" not in sql
        assert sql.count("(") == 2
        table = sql.split()[2]
        assert ("id", "INTEGER", 1) in [(c[1], c[2], c[5]) for c in conn.execute(f"PRAGMA table_info({table})")]
        assert not conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)
        ).fetchall()
    conn.close()


async def test_a_lock_held_elsewhere_does_not_stall_the_event_loop(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", busy_timeout_ms=3000)
    await store.start()
    try:
        await store.append("c", [Message.user("before")])
        locker = sqlite3.connect(tmp_path / "bot.db", isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        write = asyncio.ensure_future(store.append("c", [Message.user("after the lock")]))
        # Statements run on the loop, but a batch that cannot take the lock goes to the writer thread, which
        # waits there: the loop keeps turning meanwhile.  (Were the loop waiting on the lock, these turns would
        # come only after the 3 s busy timeout, and the write would have failed by then.)
        for _ in range(20):
            await asyncio.sleep(0.01)
        assert not write.done()
        locker.execute("ROLLBACK")
        locker.close()
        await asyncio.wait_for(write, CEILING_S)
        assert [m.text for m in await store.history("c")] == ["before", "after the lock"]
    finally:
        await store.close()


async def test_wal_checkpoints_run_beside_the_writer(tmp_path: Path) -> None:
    from bot.store.sql.sqlite_checkpoints import CHECKPOINT_EVERY

    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.start()
    try:
        for i in range(CHECKPOINT_EVERY + 5):  # one commit each
            await store.append("c", [Message.user(f"m{i}")])
        for _ in range(100):
            if store.stats()["checkpoints"]:
                break
            await asyncio.sleep(0.02)
        assert store.stats()["checkpoints"] >= 1
        assert await _pragma(store, "wal_autocheckpoint") == 0  # not inside a COMMIT
    finally:
        await store.close()
    assert not (tmp_path / "bot.db-wal").exists() or (tmp_path / "bot.db-wal").stat().st_size == 0
