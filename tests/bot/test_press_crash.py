"""A button press handled at once rides the commit of the resolution it makes; SIGKILL on either side of that commit.

A press the chat's handler takes at once is handed on before its inbox row commits; the resolution's write (the
press marked handled, the interrupt resolved, the run running) carries the row, and the platform hears "received"
once that commit is durable (:mod:`bot.store.sql.writer`, held inserts).  So a crash leaves either nothing of the
press (before the commit: the platform was not told, it delivers again, and the press resolves then) or all of it
(after: the row says handled, the redelivery changes nothing, and the restart resumes the run, whose tool runs
once).  A real gateway subprocess (tests/bot/_crash_gateway.py) is SIGKILLed at each point and restarted on the
same database; the fake platform redelivers the press with its id, as Telegram and Slack do.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call
from bot.events import event_key
from tests.helpers.confirm import Counter, confirm_harness
from tests.helpers.crash_gateway import Gateway, approve_payload, count_lines
from tests.waiting import CEILING_S

PRESS_ID = "press-1"
PRESS_KEY = f"console:{PRESS_ID}"


def _rows(tmp: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(tmp / "data" / "bot.db")) as db:
        return list(db.execute(sql))


def _press_rows(tmp: Path) -> list[tuple[Any, ...]]:
    return _rows(tmp, f"SELECT status FROM inbox WHERE event_key = '{PRESS_KEY}'")


def _interrupts(tmp: Path) -> list[tuple[Any, ...]]:
    return _rows(tmp, "SELECT status, resolved_by FROM interrupts")


@pytest.mark.xdist_group("crash")
def test_a_kill_before_the_resolution_commits_leaves_nothing_and_the_redelivered_press_resolves(
    tmp_path: Path,
) -> None:
    first = Gateway(tmp_path, CRASH_ON="press-commit", ACKS="1")
    first.send(text="@react delete the build cache")
    prompt = first.expect(lambda m: bool(m.get("buttons")))
    first.send(press=approve_payload(prompt), id=PRESS_ID)
    assert first.killed() == -9, "killed inside the transaction that carries the press"
    assert not [m for m in first.seen + first.backlog if m.get("acked") == PRESS_ID], "never told 'received'"
    # Handed on, written in the open transaction, never committed: nothing of the press is stored.
    assert _press_rows(tmp_path) == []
    assert _interrupts(tmp_path) == [("pending", None)]
    assert count_lines(tmp_path) == []
    second = Gateway(tmp_path, ACKS="1")
    try:
        second.send(press=approve_payload(prompt), id=PRESS_ID)  # the platform delivers it again
        assert second.expect(lambda m: m.get("acked") == PRESS_ID)["receipt"] == "accepted"
        second.expect(lambda m: m.get("text") == "done: deleted /cache")
        assert count_lines(tmp_path) == ["deleted /cache"]
        assert _press_rows(tmp_path) == [("done",)]
        assert _interrupts(tmp_path) == [("resolved", "u1")]
    finally:
        second.stop()


@pytest.mark.xdist_group("crash")
def test_a_kill_after_the_resolution_committed_resumes_once_and_the_redelivered_press_changes_nothing(
    tmp_path: Path,
) -> None:
    first = Gateway(tmp_path, CRASH_ON="edit", ACKS="1")  # after the commit: the prompt's edit, before the tool
    first.send(text="@react delete the build cache")
    prompt = first.expect(lambda m: bool(m.get("buttons")))
    first.send(press=approve_payload(prompt), id=PRESS_ID)
    assert first.killed() == -9
    assert _press_rows(tmp_path) == [("done",)], "the press's row rode the resolution's commit"
    assert _interrupts(tmp_path) == [("resolved", "u1")]
    assert count_lines(tmp_path) == []
    second = Gateway(tmp_path, ACKS="1")
    try:
        assert len(second.ready["recovery"]["resumed"]) == 1
        second.expect(lambda m: m.get("text") == "done: deleted /cache")
        # Whether or not the platform heard "received" before the kill, it may deliver the press again.
        second.send(press=approve_payload(prompt), id=PRESS_ID)
        assert second.expect(lambda m: m.get("acked") == PRESS_ID)["receipt"] == "duplicate"
        second.send(text="/help")  # a later event in the chat's lane: the redelivery was handled before it
        second.expect(lambda m: (m.get("text") or "").startswith("Commands:"))
        assert count_lines(tmp_path) == ["deleted /cache"], "the tool ran once"
        assert not [m for m in second.seen if m.get("text") == "This request is no longer pending."]
        assert _press_rows(tmp_path) == [("done",)]
        assert _interrupts(tmp_path) == [("resolved", "u1")]
    finally:
        second.stop()


def _deletes(*answers: str) -> list[Any]:
    """Per answer: the risky call (its own id), then the answer."""
    return [step for n, answer in enumerate(answers) for step in (_delete(n), answer)]


def _delete(n: int) -> Any:
    return call("delete_cache", {"path": "/tmp/build"}, id=f"c{n}")


async def _writes(h: Any) -> tuple[int, int]:
    await h.gateway.store.flush()
    stats = h.gateway.store.stats()
    return int(stats["writes"]), int(stats["commits"])


async def test_a_press_handled_at_once_rides_the_resolutions_write(make_harness: Any) -> None:
    """In process: the press's row and its resolution are one write; a press whose row was committed first takes
    one write more (the same exchange otherwise).  Each resolution ends its run: a tool call, an answer."""
    counter = Counter()
    h = await confirm_harness(make_harness, ScriptedModel([*_deletes("one", "two", "three")]), counter)
    await h.say("@react delete the build cache")
    await h.click("Approve")  # a chat's first press may write more (caches filled)
    await h.say("@react delete the build cache")
    before = await _writes(h)
    assert (await h.click("Approve"))[-1] == "two"
    at_once = await _writes(h)
    await h.say("@react delete the build cache")
    middle = await _writes(h)
    press = h.press(h.payload("Approve"))
    step = h.gateway.store.receive_step(event_key(press), str(press.chat), "action", press.model_dump_json())
    assert await h.gateway.store.receive([step]) == [True]  # as for a press whose chat was busy
    await h.gateway.inbox.publish_stored(press)
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    assert h.channel.texts()[-1] == "three"
    apart = await _writes(h)
    assert at_once[0] - before[0] == apart[0] - middle[0] - 1
    assert counter.runs == ["delete /tmp/build"] * 3
