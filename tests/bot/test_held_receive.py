"""A message handled at once is stored with its handling: one write, and still acknowledged only once durable.

The real gateway on a real SQLite database; the intake's receipt is what an adapter acknowledges on.  (When the
write that carries the row fails: tests/bot/test_inbox_faults.py and tests/store/test_held_inserts.py.)
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from bot.events import event_key
from bot.inbox import Receipt
from tests.waiting import CEILING_S, eventually

pytestmark = pytest.mark.timeout(60)


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


def _status(h: Any, key: str) -> str | None:
    """The inbox row's status as another connection sees it (what a crash would leave)."""
    with sqlite3.connect(Path(h.gateway.settings.store.data_dir) / "bot.db") as conn:
        row = conn.execute("SELECT status FROM inbox WHERE event_key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


async def _writes(h: Any) -> int:
    await h.gateway.store.flush()
    return int(h.gateway.store.stats()["writes"])


async def test_a_message_handled_at_once_takes_one_write_less(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo] * 3))
    assert await h.say("zero") == ["echo: zero"]  # a chat's first message writes more
    before = await _writes(h)
    assert await h.say("one") == ["echo: one"]
    at_once = await _writes(h) - before
    # The same exchange with the row committed first, as for an event whose chat was busy.
    event = h.message("two", id="two")
    step = h.gateway.store.receive_step(event_key(event), str(event.chat), "message", event.model_dump_json())
    assert await h.gateway.store.receive([step]) == [True]
    await h.gateway.inbox.publish_stored(event)
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts()[-1] == "echo: two"
    apart = await _writes(h) - before - at_once
    assert at_once == apart - 1


async def test_the_receipt_waits_for_the_row_not_for_the_answer(make_harness: Any) -> None:
    asked, answer = asyncio.Event(), asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        asked.set()
        await answer.wait()
        return "done"

    h = await make_harness(ScriptedModel([slow, echo]))
    first = h.message("first", id="first")
    assert await asyncio.wait_for(h.gateway.inbox.submit(first), CEILING_S) is Receipt.ACCEPTED
    # Durable when the platform hears of it: with its handling, or on its own when the handler came later (here
    # the chat's first message: its handler reads the chat's state from the database first).
    assert _status(h, event_key(first)) in ("done", "pending")
    await asyncio.wait_for(asked.wait(), CEILING_S)
    # The chat is busy now: the next message is stored on its own and acknowledged without waiting for the run.
    second = h.message("second", id="second")
    assert await asyncio.wait_for(h.gateway.inbox.submit(second), CEILING_S) is Receipt.ACCEPTED
    assert _status(h, event_key(second)) == "pending"
    answer.set()
    await eventually(lambda: h.channel.texts() == ["done", "echo: second"], what="both answers")
    assert _status(h, event_key(second)) == "done"


async def test_a_redelivered_message_is_a_duplicate_and_answered_once(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([echo]))
    message = h.message("hello", id="m1")
    assert await h.send(message) == ["echo: hello"]
    assert await asyncio.wait_for(h.gateway.inbox.submit(message), CEILING_S) is Receipt.DUPLICATE
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts() == ["echo: hello"]
