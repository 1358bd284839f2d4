"""What a person approves is exactly what runs: complete arguments, hidden text made visible, long ones shown in full
before Approve exists, invalid calls never shown."""

from __future__ import annotations

from typing import Any

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, call
from bot.interrupts.text import encode_payload
from tests.helpers.confirm import Counter, confirm_harness

HIDDEN = "echo harmless" + " " * 320 + "; echo pwned > HIDDEN.txt"


def last_tool_result(request: ModelRequest) -> str:
    return str(request.messages[-1].tool_results[0].content)


async def test_padding_cannot_hide_part_of_a_command(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([call("delete_cache", {"path": HIDDEN}, id="c1"), "ran"])
    h = await confirm_harness(make_harness, model, counter)
    prompt = (await h.say("@react tidy up"))[-1]
    assert 'delete_cache(path="echo harmless⟨320 spaces⟩; echo pwned > HIDDEN.txt")' in prompt
    assert "…" not in prompt
    await h.click("Approve")
    assert counter.runs == [f"delete {HIDDEN}"]  # exactly what was shown


async def test_invisible_characters_are_shown_as_escapes(make_harness: Any) -> None:
    counter = Counter()
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/a\u202e\u200b/evil"}, id="c1"), "ok"])
    h = await confirm_harness(make_harness, model, counter)
    prompt = (await h.say("@react clean"))[-1]
    assert 'delete_cache(path="/tmp/a\\u202e\\u200b/evil")' in prompt


async def test_a_confirmation_too_long_for_one_message_is_shown_in_full_before_approve(make_harness: Any) -> None:
    counter = Counter()
    long_command = "/tmp/" + "/".join(f"dir{i:04d}" for i in range(900))  # about 7,000 characters
    model = ScriptedModel([call("delete_cache", {"path": long_command}, id="c1"), "ran it"])
    h = await confirm_harness(make_harness, model, counter)
    h.channel.text_limit = 2000
    h.gateway.manager.text_limits["console"] = 2000
    await h.say("@react print the words")
    preview = h.prompt()
    assert len(preview.text) <= 2000 and "cut here" in preview.text
    labels = [b.label for row in preview.buttons for b in row]
    assert labels == ["📄 Show all", "❌ Deny"]  # no Approve before all of it was seen
    row = await h.gateway.runs.pending(str(h.chat()))
    assert row is not None
    # Neither a typed yes nor a forged Approve button runs it while it is locked.
    assert "Show all first" in (await h.say("yes"))[-1]
    forged = await h.send(h.press(encode_payload(row.id, row.nonce, "a")))
    assert forged == ["This request is no longer pending."] and counter.runs == []
    shown = await h.click("Show all")
    assert long_command in "".join(shown)  # the whole argument, no ellipsis
    labels = [b.label for row in h.prompt().buttons for b in row]
    assert labels[:2] == ["✅ Approve", "❌ Deny"]
    assert any("Shown in full below" in m.text for m in h.edits())
    after = await h.click("Approve")
    assert counter.runs == [f"delete {long_command}"] and after[-1] == "ran it"


async def test_invalid_arguments_go_back_to_the_model_not_to_the_user(make_harness: Any) -> None:
    counter = Counter()
    seen: list[str] = []

    def fix(request: ModelRequest) -> Any:
        seen.append(last_tool_result(request))
        return call("delete_cache", {"path": "/tmp/x"}, id="c3")

    model = ScriptedModel([call("delete_cache", {}, id="c1"), fix, "deleted"])
    h = await confirm_harness(make_harness, model, counter)
    texts = await h.say("@react clean up")
    assert seen and "invalid arguments for delete_cache" in seen[0] and "path" in seen[0]
    assert len([t for t in texts if "Confirm" in t]) == 1 and 'delete_cache(path="/tmp/x")' in texts[-1]
    await h.click("Approve")
    assert counter.runs == ["delete /tmp/x"]


async def test_nested_object_for_a_string_is_refused_before_the_prompt(make_harness: Any) -> None:
    counter = Counter()
    seen: list[str] = []

    def give_up(request: ModelRequest) -> str:
        seen.append(last_tool_result(request))
        return "could not"

    model = ScriptedModel([call("delete_cache", {"path": {"nested": 1}}, id="c1"), give_up])
    h = await confirm_harness(make_harness, model, counter)
    assert await h.say("@react do it") == ["could not"]
    assert "invalid arguments for delete_cache" in seen[0] and counter.runs == []


async def test_absurd_arguments_end_in_a_tool_error_and_the_run_finishes(make_harness: Any) -> None:
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(900):
        cursor["a"] = {}
        cursor = cursor["a"]
    seen: list[str] = []

    def answer(request: ModelRequest) -> str:
        seen.append(last_tool_result(request))
        return "sorry"

    counter = Counter()
    model = ScriptedModel([call("delete_cache", deep, id="c1"), answer])
    h = await confirm_harness(make_harness, model, counter)
    assert await h.say("@react go") == ["sorry"]
    assert "nested more than 32 levels" in seen[0]
    assert await h.gateway.runs.runs_with_status("running") == []
