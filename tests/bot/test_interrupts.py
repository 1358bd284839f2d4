"""ToolConfirm end to end through the gateway: buttons, text, grants, refusals, expiry, restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import ScriptedModel, call, calls
from agents.react import DENIED
from agents.resolutions import ToolDecision
from bot.clock import FakeClock
from bot.events import event_key
from bot.interrupts.text import encode_payload, parse_payload
from tests.helpers.confirm import DELETE, Counter, confirm_harness, risky_tools
from tests.waiting import CEILING_S, eventually


async def test_prompt_shows_tool_and_arguments_before_anything_runs(make_harness: Any) -> None:
    counter = Counter()
    h = await confirm_harness(make_harness, ScriptedModel([DELETE, "Deleted the build cache."]), counter)
    texts = await h.say("@react delete the build cache")
    assert counter.runs == []
    assert len(texts) == 1 and 'delete_cache(path="/tmp/build")' in texts[0]
    labels = [b.label for row in h.prompt().buttons for b in row]
    assert labels[:2] == ["✅ Approve", "❌ Deny"] and any(label.startswith("Always allow") for label in labels)
    payload = h.payload("Approve")
    assert len(payload.encode()) <= 64 and parse_payload(payload) is not None
    after = await h.click("Approve")
    assert counter.runs == ["delete /tmp/build"]
    assert after[-1] == "Deleted the build cache."
    edit = h.edits()[-1]
    assert edit.edit_of is not None and "Approved by u1" in edit.text and not edit.buttons
    h.gateway.model.assert_complete()  # type: ignore[attr-defined]


async def test_deny_by_button_gives_a_denied_result(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "OK, I left it alone."])
    h = await confirm_harness(make_harness, model, counter)
    await h.say("@react delete the build cache")
    assert (await h.click("Deny"))[-1] == "OK, I left it alone."
    assert counter.runs == []
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and result.content == DENIED
    assert "Denied by u1" in h.edits()[-1].text
    model.assert_complete()


@pytest.mark.parametrize(
    ("reply", "ran"),
    [("yes", True), ("OK!", True), ("同意", True), ("确认", True), ("no", False), ("拒绝", False), ("取消", False)],
)
async def test_text_yes_no_in_english_and_chinese(make_harness: Any, reply: str, ran: bool) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "done"])
    h = await confirm_harness(make_harness, model, counter)
    await h.say("@react delete the build cache")
    assert (await h.say(reply))[-1] == "done"
    assert counter.runs == (["delete /tmp/build"] if ran else [])
    model.assert_complete()


async def test_unclear_text_asks_again_then_supersedes(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "A new answer."])
    h = await confirm_harness(make_harness, model, counter)
    await h.say("@react delete the build cache")
    again = await h.say("hmm, what would that do?")
    assert len(again) == 1 and "waiting for your decision" in again[0]
    new = await h.say("@chat never mind, tell me a joke")
    assert new[-1] == "A new answer."
    assert any("moved on" in e.text for e in h.edits())
    assert counter.runs == []
    history = await h.gateway.store.history(str(h.chat()))
    denied = [r for m in history for r in m.tool_results]
    assert len(denied) == 1 and denied[0].is_error and "new request" in denied[0].content
    # The superseded prompt's buttons are dead now.
    stale = await h.click("Approve")
    assert stale == ["This request is no longer pending."]
    model.assert_complete()


async def test_forged_stale_double_and_wrong_user_presses(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "done"])
    h = await confirm_harness(make_harness, model, counter, admins=["boss"])
    await h.say("@react delete the build cache")
    press = parse_payload(h.payload("Approve"))
    assert press is not None
    forged = encode_payload(press.interrupt_id, "zzzzzz", "a")
    assert await h.send(h.press(forged)) == ["This request is no longer pending."]
    assert await h.send(h.press("not-a-payload")) == ["This request is no longer pending."]
    assert await h.send(h.press(encode_payload("unknownid1", press.nonce, "a"))) == [
        "This request is no longer pending."
    ]
    other = await h.click("Approve", user="mallory")
    assert other == ["Only the person who was asked (or an admin) can answer this."]
    assert counter.runs == []
    first = await h.click("Approve", user="boss")
    assert first[-1] == "done" and counter.runs == ["delete /tmp/build"]
    again = await h.click("Approve")
    assert again == ["This request is no longer pending."]
    assert counter.runs == ["delete /tmp/build"]
    model.assert_complete()


async def test_concurrent_presses_resolve_exactly_once(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "done"])
    h = await confirm_harness(make_harness, model, counter, admins=["boss"])
    await h.say("@react delete the build cache")
    # Two resolutions racing (two presses, or a press and the expiry): the conditional update picks one.
    row = await h.gateway.runs.pending(str(h.chat()))
    assert row is not None
    results = await asyncio.gather(
        h.gateway.runs.resolve(row, "resolved", {"approved": ["c1"]}, "u1"),
        h.gateway.runs.resolve(row, "resolved", {"approved": []}, "boss"),
    )
    assert sorted(results) == [False, True]
    # Finish the run so the history is complete.
    run = await h.gateway.runs.get_run(row.run_id)
    assert run is not None
    await h.gateway.manager.resume(run, ToolDecision(approved=("c1",)))
    assert counter.runs == ["delete /tmp/build"]
    model.assert_complete()


def ops_agent(tmp_path: Path) -> dict[str, Any]:
    """An agent allowed every tool, high risk included."""
    directory = tmp_path / "agents"
    directory.mkdir(exist_ok=True)
    (directory / "ops.md").write_text(
        "---\nkind: agent\nname: ops\ndescription: operations\nrunner: react\ntools:\n  allow: ['*']\n---\n"
        "You run operations.\n"
    )
    return {"agents": {"dirs": [str(directory)]}}


async def test_per_call_choice_with_several_calls(make_harness: Any, tmp_path: Path) -> None:
    counter = Counter()
    two = calls(("delete_cache", {"path": "/a"}, "d1"), ("run_command", {"command": "ls"}, "d2"), ("get_time", {}, "t"))
    model = ScriptedModel([two, "partly done"])
    h = await confirm_harness(make_harness, model, counter, **ops_agent(tmp_path))
    await h.say("@ops clean up")
    assert counter.runs == ["time"], "the safe call runs at once; the risky ones wait"
    labels = [b.label for row in h.prompt().buttons for b in row]
    assert "Only 1: delete_cache" in labels and "Only 2: run_command" in labels
    assert not any(label.startswith("Always allow") for label in labels), "run_command is never grantable"
    await h.click("Only 1")
    assert counter.runs == ["time", "delete /a"]
    results = {r.call_id: r for r in model.requests[1].messages[-1].tool_results}
    assert results["d2"].content == DENIED and results["t"].content == "12:00"
    model.assert_complete()


async def test_always_allow_grant_persists_and_can_be_revoked(make_harness: Any, tmp_path: Path) -> None:
    counter = Counter()
    model = ScriptedModel([call("write_note", {"text": "a"}, id="w1"), "noted a"])
    cfg = {"agents": {"dirs": [str(tmp_path / "agents")]}}
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "scribe.md").write_text(
        "---\nkind: agent\nname: scribe\ndescription: writes notes\nrunner: react\n"
        "confirmation:\n  require_confirmation: [write_note]\n---\nYou write notes.\n"
    )
    h = await confirm_harness(make_harness, model, counter, **cfg)
    await h.say("@scribe note a")
    await h.click("Always allow")
    assert counter.runs == ["note a"]
    assert "write_note" in (await h.say("/permissions"))[0]
    model.add(call("write_note", {"text": "b"}, id="w2"), "noted b")
    assert (await h.say("@scribe note b"))[-1] == "noted b", "granted: no prompt this time"
    assert "Revoked" in (await h.say("/permissions revoke write_note"))[0]
    model.add(call("write_note", {"text": "c"}, id="w3"))
    assert "write_note" in (await h.say("@scribe note c"))[-1]
    audit = await h.gateway.runs.audit_log()
    assert [a["name"] for a in audit[:2]] == ["grants", "grants"]
    await h.say("/cancel")


async def test_commands_never_resolve_and_cancel_pending_reset(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, call("delete_cache", {"path": "/x"}, id="c2")])
    h = await confirm_harness(make_harness, model, counter)
    await h.say("@react delete the build cache")
    assert "tool_confirm" in (await h.say("/pending"))[0]
    await h.say("/help")
    assert await h.gateway.runs.pending(str(h.chat())) is not None, "a command does not resolve it"
    assert (await h.say("/cancel"))[-1] == "Cancelled."
    assert "Cancelled by u1" in h.edits()[-1].text
    assert (await h.say("/pending"))[0] == "Nothing is pending in this chat."
    await h.say("@react delete /x")
    out = await h.say("/reset")
    assert "cancelled" in out[-1]
    assert await h.gateway.runs.pending(str(h.chat())) is None
    assert counter.runs == []
    model.assert_complete()


async def test_expiry_during_runtime_counts_as_denied(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "I did not delete it (no confirmation)."])
    clock = FakeClock()
    h = await confirm_harness(make_harness, model, counter, clock=clock)
    await h.say("@react delete the build cache")
    await h.gateway.store.flush()  # the prompt's reference is marked (so expiry edits the prompt)
    await clock.advance(3599)
    assert not any("Expired" in e.text for e in h.edits()), "an hour to answer (interrupts.tool_confirm_timeout_s)"
    await clock.advance(2)
    await eventually(lambda: h.channel.texts()[-1].startswith("I did not delete"), what="the run to go on, denied")
    assert h.channel.texts()[-1] == "I did not delete it (no confirmation)."
    await eventually(lambda: any("Expired" in e.text for e in h.edits()), what="the prompt edited to say so")
    assert counter.runs == []
    assert "not confirmed in time" in model.requests[1].messages[-1].tool_results[0].content
    model.assert_complete()


async def test_pending_press_after_restart_resumes(make_harness: Any) -> None:
    counter = Counter()
    tools = risky_tools(counter)
    model = ScriptedModel([DELETE])
    h = await make_harness(model, tools=tools)
    await h.say("@react delete the build cache")
    payload = h.payload("Approve")
    model2 = ScriptedModel(["Deleted after the restart."])
    await h.restart(model2, tools)
    after = await h.send(h.press(payload))
    assert after[-1] == "Deleted after the restart."
    assert counter.runs == ["delete /tmp/build"]
    row = await h.gateway.runs.get_interrupt(parse_payload(payload).interrupt_id)  # type: ignore[union-attr]
    assert row is not None and row.prompt_ref is not None
    assert h.edits()[-1].edit_of == row.prompt_ref, "the prompt sent before the restart is edited"
    model.assert_complete()
    model2.assert_complete()


async def test_expiry_during_downtime_expires_at_start(make_harness: Any) -> None:
    counter = Counter()
    tools = risky_tools(counter)
    model = ScriptedModel([DELETE])
    clock = FakeClock()
    h = await make_harness(model, tools=tools, interrupts={"tool_confirm_timeout_s": 600}, clock=clock)
    await h.say("@react delete the build cache")
    model2 = ScriptedModel(["Not deleted: the confirmation expired."])

    # The gateway goes down before the expiry fires, and stays down past the deadline.
    await h.restart(model2, tools, down=lambda: clock.advance(601))
    assert h.gateway.recovery is not None and len(h.gateway.recovery.expired) == 1
    assert any(m.edit_of and "Expired" in m.text for m in h.channel.sent)
    assert h.channel.texts()[-1] == "Not deleted: the confirmation expired."
    assert counter.runs == []
    model.assert_complete()
    model2.assert_complete()


async def test_a_redelivered_press_is_answered_once(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([DELETE, "done"])
    h = await confirm_harness(make_harness, model, counter)
    await h.say("@react delete the build cache")
    payload = h.payload("Approve")
    assert (await h.send(h.press(payload, id="press-1")))[-1] == "done"
    assert await h.send(h.press(payload, id="press-1")) == []  # the platform sent it again
    assert await h.send(h.press(payload, id="press-2")) == ["This request is no longer pending."]
    assert counter.runs == ["delete /tmp/build"]
    model.assert_complete()


async def test_an_answer_the_database_cannot_take_yet_waits_and_takes_effect_once(make_harness: Any) -> None:
    import sqlite3

    from bot.store.retry import DELAYED

    counter = Counter()
    model = ScriptedModel([DELETE, "done"])
    h = await confirm_harness(make_harness, model, counter, store={"busy_timeout_ms": 50})
    await h.say("@react delete the build cache")
    payload = h.payload("Approve")
    await h.gateway.store.flush()
    path = h.gateway.settings.store.database_url().split(":///", 1)[1]
    before = len(h.channel.texts())
    # The press is stored (the platform hears "received"); then the database is locked by another process before
    # its handler writes.  (Handled at once, the press's row commits with the handler's first write: see
    # tests/bot/test_held_receive.py; here it was stored apart, as when the handler came later.)
    press = h.press(payload, id="press-1")
    step = h.gateway.store.receive_step(event_key(press), str(press.chat), "action", press.model_dump_json())
    assert await h.gateway.store.receive([step]) == [True]
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    await h.gateway.inbox.publish_stored(press)
    try:
        await eventually(lambda: DELAYED in h.channel.texts()[before:], what="the answer said to wait")
        assert counter.runs == [], "nothing ran while its answer could not be recorded"
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    await asyncio.wait_for(h.gateway.bus.join(), CEILING_S)
    await eventually(lambda: "done" in h.channel.texts(), what="the answer taking effect once the lock is gone")
    assert h.channel.texts()[before:].count(DELAYED) == 1
    assert counter.runs == ["delete /tmp/build"]
    # The same press, redelivered by the platform, is a plain duplicate.
    assert await h.send(h.press(payload, id="press-1")) == []
    assert counter.runs == ["delete /tmp/build"]
    model.assert_complete()
