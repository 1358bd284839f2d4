"""The store inside the real gateway: a failed commit means no reply, and the user is told; a message stored
and refused later is answered once the database takes writes again."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agents.models.base import ModelRequest
from bot.clock import FakeClock
from bot.gateway.supervisor import DELAYED, RETRY_CAP_S
from bot.inbox import NotStored
from tests.waiting import CEILING_S, eventually

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]


def _db_path(harness) -> str:
    return harness.gateway.settings.store.database_url().split(":///", 1)[1]


async def test_locked_database_at_intake_is_not_acknowledged(make_harness, scripted) -> None:
    model = scripted("answered after the lock")
    h = await make_harness(model, store={"busy_timeout_ms": 50})
    await h.say("/help")  # the database file exists and the writer is warm
    locker = sqlite3.connect(_db_path(h), isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(NotStored):  # the adapter does not acknowledge: the platform delivers it again
            await h.say("hello?", id="m-locked")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert model.requests == []  # nothing acted on an unsaved message
    assert await h.gateway.store.history(str(h.chat())) == []
    assert await h.say("hello?", id="m-locked") == ["answered after the lock"]


async def test_locked_database_at_accept_is_answered_once_it_is_free(make_harness, scripted) -> None:
    """A stored message whose handling the database refuses (locked) is not dropped: the person hears once that
    the answer is delayed, and it is answered, once, as soon as the database takes the write again."""
    model = scripted("answered after the lock")
    clock = FakeClock()
    h = await make_harness(model, store={"busy_timeout_ms": 50}, clock=clock)
    await h.say("/help")
    before = len(h.channel.texts())
    await h.gateway.inbox.submit(h.message("hello?", id="m-stored"))  # stored: the platform heard "received"
    locker = sqlite3.connect(_db_path(h), isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # ...and the database refuses the write that would act on it
    try:
        await eventually(lambda: h.channel.texts()[before:] == [DELAYED], what="the delayed notice")
        for _ in range(3):  # attempts while it is still locked: no second notice, nothing acted on
            await clock.advance(RETRY_CAP_S)
        assert model.requests == []
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    await clock.advance(RETRY_CAP_S)
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts()[before:] == [DELAYED, "answered after the lock"]
    assert [m.text for m in await h.gateway.store.history(str(h.chat()))][-2:] == ["hello?", "answered after the lock"]
    # The platform's redelivery is a duplicate now.
    assert await h.say("hello?", id="m-stored") == []


async def test_an_answer_the_database_cannot_take_yet_waits_and_goes_out_once(make_harness, scripted) -> None:
    from bot.store.retry import DELAYED

    path: list[str] = []
    locker: list[sqlite3.Connection] = []

    def lock_then_answer(_request: ModelRequest) -> str:
        conn = sqlite3.connect(path[0], isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        locker.append(conn)
        return "saved once the lock was gone"

    h = await make_harness(scripted(lock_then_answer, "second try"), store={"busy_timeout_ms": 50})
    path.append(_db_path(h))
    asked = asyncio.create_task(h.say("question"))
    try:
        await eventually(lambda: DELAYED in h.channel.texts(), what="the answer said to wait")
        assert "saved once the lock was gone" not in h.channel.texts(), "not sent before it is saved"
    finally:
        for conn in locker:
            conn.execute("ROLLBACK")
            conn.close()
    assert await asked == [DELAYED, "saved once the lock was gone"]
    history = [m.text for m in await h.gateway.store.history(str(h.chat()))]
    assert history == ["question", "saved once the lock was gone"]
    assert await h.say("again") == ["second try"]


def test_benchmark_runs_and_prints_one_json_line() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "bench/gateway.py",
            "--chats",
            "20",
            "--seconds",
            "0.5",
            "--rate",
            "100",
            "--open-seconds",
            "0.5",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["synchronous"] == "FULL" and result["errors"] == 0
    assert result["throughput_msgs_per_s"] > 0 and result["open_loop_msgs"] == 50
    assert result["store"]["commits"] < result["store"]["writes"]
