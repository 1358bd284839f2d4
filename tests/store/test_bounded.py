"""Storage that stays bounded and private: the WAL starts over, old runs go, history is cut when idle,
one process per SQLite file, no known secret in any row."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from agents.messages import Message
from bot.clock import FakeClock
from bot.store.sql.lock import DatabaseInUse
from bot.store.sql.ops import Step, utcnow
from bot.store.sql.repos.runs import RunRow, RunStore
from bot.store.sql.repos.traces import SqlTraces
from bot.store.sql.store import SqlStore
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]


async def test_the_wal_starts_over_under_steady_writes(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", history_limit=50)
    await store.start()
    wal = tmp_path / "bot.db-wal"
    sizes = []
    try:
        for _round in range(12):
            await asyncio.gather(
                *(store.append(f"c{c}", [Message.user("x" * 2000)]) for c in range(250))
            )  # 250 writes of ~2 KB per round
            sizes.append(wal.stat().st_size)
            await asyncio.sleep(0.05)  # the checkpoint beside the writer runs meanwhile
        stats = store.stats()
    finally:
        await store.close()
    assert stats["wal_resets"] >= 1, stats
    # 3,000 writes of 2 KB went through; without resets the WAL holds all of them (> 6 MB).
    assert max(sizes) < 6_000_000, sizes


async def test_finished_runs_their_interrupts_and_ledger_and_old_audit_rows_are_deleted(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", retention_interval_s=3600)
    await store.start()
    runs = RunStore(store, runs_days=30, audit_days=365)
    try:
        old, recent, paused = (RunRow(f"r{i}", "c", "react", "running", "corr", "u") for i in range(3))
        for run in (old, recent, paused):
            await store.write([runs.start_run_step(run)])
        for rid in ("r0", "r1"):
            await store.write(
                [
                    Step("UPDATE runs SET status = 'done' WHERE id = ?", (rid,)),
                    Step(
                        "INSERT INTO tool_ledger (run_id, call_id, name, status, updated_at) "
                        "VALUES (?, 'c1', 't', 'succeeded', ?)",
                        (rid, utcnow()),
                    ),
                ]
            )
        await store.write([Step("UPDATE runs SET status = 'paused' WHERE id = 'r2'")])
        long_ago = utcnow() - timedelta(days=400)
        await store.write(
            [
                Step("UPDATE runs SET updated_at = ? WHERE id IN ('r0', 'r2')", (long_ago,)),
                Step(
                    "INSERT INTO audit_log (at, actor, scope, name) VALUES (?, 'a', 's', 'old'), (?, 'a', 's', 'new')",
                    (long_ago, utcnow()),
                ),
            ]
        )
        await store.prune()
        assert [r[0] for r in await store.read("SELECT id FROM runs ORDER BY id")] == ["r1", "r2"]
        assert [r[0] for r in await store.read("SELECT run_id FROM tool_ledger")] == ["r1"]
        assert [r[0] for r in await store.read("SELECT name FROM audit_log")] == ["new"]
    finally:
        await store.close()


async def test_history_is_cut_to_its_limit_even_when_nothing_more_is_written(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", history_limit=3, retention_interval_s=5, clock=clock)
    await store.start()
    try:
        await store.append("c", [Message.user(f"m{i}") for i in range(10)])
        await clock.advance(5)  # no write follows: the idle pass does it

        async def cut() -> bool:
            return (await store.read("SELECT count(*) FROM session_messages"))[0][0] == 3

        await eventually(cut, what="the history cut to its limit")
    finally:
        await store.close()


async def test_a_second_process_on_one_sqlite_file_is_refused_naming_both(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    first = SqlStore(url, exclusive=True)
    await first.start()
    try:
        second = SqlStore(url, exclusive=True)
        with pytest.raises(DatabaseInUse) as refused:
            await second.start()
        text = str(refused.value)
        assert str(tmp_path / "bot.db") in text and f"pid {os.getpid()}" in text and "PostgreSQL" in text
        reader = SqlStore(url)  # read-only tools do not need the lock
        await reader.start()
        await reader.close()
    finally:
        await first.close()
    again = SqlStore(url, exclusive=True)  # released on close
    await again.start()
    await again.close()


def test_a_second_bot_run_exits_at_once_with_a_clear_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "BOT_"))}
    env.update(HOME=str(tmp_path), BOT_CHANNELS__CONSOLE__ENABLED="false", BOT_HTTP__ENABLED="false")
    first = subprocess.Popen(
        [sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        lock = tmp_path / "data" / "bot.db.lock"
        while not (lock.exists() and lock.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.1)  # polls: the first process's start-up
        second = subprocess.run(  # waiting for the lock instead would run into this timeout
            [sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert second.returncode != 0
        assert "in use by another bot process" in second.stderr and f"pid {first.pid}" in second.stderr
        assert "bot.db" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=10)


async def test_no_known_secret_reaches_a_stored_row(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", secrets=[secret, "short"])
    await store.start()
    try:
        await store.append("c", [Message.assistant(f"the key is {secret}!"), Message.user("short is fine")])
        await store.write(
            [
                Step(
                    "INSERT INTO tool_ledger (run_id, call_id, name, status, result, updated_at) "
                    "VALUES ('r', 'c', 't', 'succeeded', ?, ?)",
                    (f'{{"content": "env: {secret}"}}', utcnow()),
                )
            ]
        )
        assert store.many_rows  # trace rows go as one executemany step on SQLite: each of its rows is scrubbed too
        rows = [(f"e{n}", "c", "r", None, "a", "tool", f'{{"out": "{n}: {secret}"}}', utcnow()) for n in range(3)]
        await SqlTraces(store).add(rows)
    finally:
        await store.close()
    conn = sqlite3.connect(tmp_path / "bot.db")
    dump = "\n".join(conn.iterdump())
    traced = [r[0] for r in conn.execute("SELECT data FROM trace_events ORDER BY seq")]
    conn.close()
    assert secret not in dump and "env: ‹redacted: secret›" in dump
    assert traced == [f'{{"out": "{n}: ‹redacted: secret›"}}' for n in range(3)]
    assert "the key is ‹redacted: API key›!" in dump  # the history's own redaction saw its shape first
    assert "short is fine" in dump  # values under 8 characters are not treated as secrets
