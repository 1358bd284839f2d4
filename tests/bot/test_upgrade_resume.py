"""Runs paused by an older gateway resume after the upgrade: their dict checkpoints and their interrupts'
resolutions, as the rows hold them, read back, and nothing that ran runs again."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from bot.interrupts.text import parse_payload
from tests.conftest import Harness
from tests.helpers.confirm import DELETE, Counter, risky_tools


def _database(h: Harness) -> str:
    return h.gateway.settings.store.database_url().removeprefix("sqlite:///")


def _old_checkpoint(saved: str, version: int) -> str:
    """The checkpoint as an older gateway wrote it: ``make_checkpoint``'s dict (version 1), or the runner's
    state at the top level (version 0), through ``json.dumps``."""
    now = json.loads(saved)
    if version == 0:
        return json.dumps({**now["state"], "agent": now["agent"], "runner": now["runner"]})
    keys = ("$schemaVersion", "agent", "runner", "phase", "state", "handoff_chain")
    return json.dumps({k: now[k] for k in keys})


@pytest.mark.parametrize("version", [0, 1])
async def test_a_pause_stored_by_an_older_gateway_resumes_on_a_press(make_harness: Any, version: int) -> None:
    counter = Counter()
    tools = risky_tools(counter)
    model = ScriptedModel([DELETE])
    h = await make_harness(model, tools=tools)
    await h.say("@react delete the build cache")
    payload = h.payload("Approve")

    async def older_rows() -> None:
        with sqlite3.connect(_database(h)) as db:
            ((run_id, saved),) = db.execute("SELECT id, checkpoint FROM runs WHERE status = 'paused'").fetchall()
            db.execute("UPDATE runs SET checkpoint = ? WHERE id = ?", (_old_checkpoint(saved, version), run_id))

    model2 = ScriptedModel(["Deleted after the upgrade."])
    await h.restart(model2, tools, down=older_rows)
    after = await h.send(h.press(payload))
    assert after[-1] == "Deleted after the upgrade."
    assert counter.runs == ["delete /tmp/build"]
    model.assert_complete()
    model2.assert_complete()


async def test_an_answer_an_older_gateway_stored_but_did_not_act_on_is_acted_on_once(make_harness: Any) -> None:
    """Crash after the resolution committed, before the run went on: the row holds the old one-class
    resolution JSON; recovery reads it as a ToolDecision and runs the approved call exactly once."""
    counter = Counter()
    tools = risky_tools(counter)
    model = ScriptedModel([DELETE])
    h = await make_harness(model, tools=tools)
    await h.say("@react delete the build cache")
    interrupt_id = parse_payload(h.payload("Approve")).interrupt_id  # type: ignore[union-attr]

    async def answered_then_crashed() -> None:
        with sqlite3.connect(_database(h)) as db:
            ((run_id, saved),) = db.execute("SELECT id, checkpoint FROM runs WHERE status = 'paused'").fetchall()
            db.execute(
                "UPDATE runs SET status = 'running', checkpoint = ? WHERE id = ?", (_old_checkpoint(saved, 1), run_id)
            )
            db.execute(
                "UPDATE interrupts SET status = 'resolved', resolution = ?, resolved_by = 'u1' WHERE id = ?",
                (json.dumps({"approved": ["c1"], "choice": "a"}), interrupt_id),
            )

    model2 = ScriptedModel(["Deleted after the restart."])
    await h.restart(model2, tools, down=answered_then_crashed)
    assert h.gateway.recovery is not None and len(h.gateway.recovery.resumed) == 1
    await h.gateway.settled()
    assert h.channel.texts()[-1] == "Deleted after the restart."
    assert counter.runs == ["delete /tmp/build"]
    model2.assert_complete()
