"""SIGKILL a gateway subprocess at the three dangerous points; the restart must resume, lose nothing,
and never run a tool twice (a counting tool proves it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.crash_gateway import Gateway, approve_payload, count_lines
from tests.waiting import eventually_sync

pytestmark = pytest.mark.xdist_group("crash")


def test_crash_after_checkpoint_before_prompt_sent(tmp_path: Path) -> None:
    first = Gateway(tmp_path, CRASH_ON="prompt")
    first.send(text="@react delete the build cache")
    assert first.killed() == -9
    second = Gateway(tmp_path)
    try:
        assert second.ready["recovery"]["resent"] == 1
        prompt = second.expect(lambda m: bool(m.get("buttons")))
        assert "delete_cache" in prompt["text"]
        second.send(press=approve_payload(prompt))
        second.expect(lambda m: m.get("text") == "done: deleted /cache")
        assert count_lines(tmp_path) == ["deleted /cache"]
    finally:
        second.stop()


def test_crash_after_resolution_before_tool_starts(tmp_path: Path) -> None:
    first = Gateway(tmp_path, CRASH_ON="edit")
    first.send(text="@react delete the build cache")
    prompt = first.expect(lambda m: bool(m.get("buttons")))
    first.send(press=approve_payload(prompt))
    assert first.killed() == -9
    assert count_lines(tmp_path) == []
    second = Gateway(tmp_path)
    try:
        assert len(second.ready["recovery"]["resumed"]) == 1
        second.expect(lambda m: m.get("text") == "done: deleted /cache")
        assert count_lines(tmp_path) == ["deleted /cache"]
        # The old prompt's button is dead now.
        second.send(press=approve_payload(prompt))
        second.expect(lambda m: m.get("text") == "This request is no longer pending.")
        assert count_lines(tmp_path) == ["deleted /cache"]
    finally:
        second.stop()


def test_crash_during_the_tool_is_reported_not_retried(tmp_path: Path) -> None:
    first = Gateway(tmp_path, TOOL_HANGS="1")
    first.send(text="@react delete the build cache")
    prompt = first.expect(lambda m: bool(m.get("buttons")))
    first.send(press=approve_payload(prompt))
    eventually_sync(lambda: count_lines(tmp_path) == ["started"], what="the tool to start")
    first.stop()
    second = Gateway(tmp_path)
    try:
        assert len(second.ready["recovery"]["resumed"]) == 1
        notice = second.expect(lambda m: "not retried" in (m.get("text") or ""))
        assert "delete_cache" in notice["text"]
        answer = second.expect(lambda m: (m.get("text") or "").startswith("done:"))
        assert "interrupted" in answer["text"]
        assert count_lines(tmp_path) == ["started"], "the risky call was not run a second time"
    finally:
        second.stop()


def test_a_run_cut_off_before_anything_ran_is_run_again(tmp_path: Path) -> None:
    first = Gateway(tmp_path, CRASH_ON="model")
    first.send(text="@react delete the build cache")
    assert first.killed() == -9, "killed at the model call"
    second = Gateway(tmp_path)
    try:
        assert len(second.ready["recovery"]["rerun"]) == 1
        assert second.ready["recovery"]["reported"] == []
        prompt = second.expect(lambda m: bool(m.get("buttons")))
        second.send(press=approve_payload(prompt))
        second.expect(lambda m: m.get("text") == "done: deleted /cache")
        assert count_lines(tmp_path) == ["deleted /cache"]
        assert not [m for m in second.seen if "send it again" in (m.get("text") or "")]
    finally:
        second.stop()


def test_a_run_cut_off_after_a_tool_finished_reuses_its_result(tmp_path: Path) -> None:
    first = Gateway(tmp_path, CRASH_ON="after-tool")
    first.send(text="@react note buy milk")
    assert first.killed() == -9, "killed at the model call after the tool"
    assert count_lines(tmp_path) == ["noted buy milk"]
    second = Gateway(tmp_path)
    try:
        assert len(second.ready["recovery"]["rerun"]) == 1
        second.expect(lambda m: m.get("text") == "done: noted buy milk")
        assert count_lines(tmp_path) == ["noted buy milk"], "the re-run took the recorded result"
    finally:
        second.stop()


def test_a_run_cut_off_inside_a_tool_with_side_effects_names_the_call(tmp_path: Path) -> None:
    first = Gateway(tmp_path, TOOL_HANGS="1")
    first.send(text="@react note buy milk")
    eventually_sync(lambda: count_lines(tmp_path) == ["started"], what="the tool to start")
    first.stop()
    second = Gateway(tmp_path)
    try:
        assert len(second.ready["recovery"]["reported"]) == 1
        notice = second.expect(lambda m: "restarted" in (m.get("text") or ""))
        assert 'append_note(text="buy milk")' in notice["text"]
        assert "send it again" not in notice["text"]
        assert count_lines(tmp_path) == ["started"], "the call whose outcome is unknown did not run again"
    finally:
        second.stop()


def test_a_job_fire_cut_off_by_sigkill_is_sent_once_after_restart(tmp_path: Path) -> None:
    first = Gateway(tmp_path, CRASH_ON="job", JOB_IN_S="1")
    first.expect(lambda m: "job" in m)
    assert first.killed() == -9, "killed while sending the fire's message"
    second = Gateway(tmp_path)
    try:
        assert second.ready["recovery"]["resent"] == 1, "the committed fire's message is in the outbox"
        fired = second.expect(lambda m: (m.get("text") or "").startswith("⏰"))
        assert fired["text"] == "⏰ tick"
        second.send(text="/jobs")  # a one-time job that fired has no next fire
        second.expect(lambda m: (m.get("text") or "").startswith("No jobs in this chat"))
        assert [m for m in second.seen if (m.get("text") or "").startswith("⏰")] == [fired]
    finally:
        second.stop()
