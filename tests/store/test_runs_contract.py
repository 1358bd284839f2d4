"""One suite over both run tables: :class:`~bot.store.sql.repos.runs.RunStore` (SQLite and PostgreSQL) and the
in-memory :class:`~tests.fakes.run_repos.FakeRuns` unit tests use, so the fake is held to what the store does: a
run's life (started with its turn, paused with an interrupt and its prompt in the outbox, one pending interrupt per
chat, resolved once, finished with its history and reply), the tool ledger, the audit log and the outbox."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agents.messages import Message, ToolCall, ToolResult
from bot.store.base import StoreError
from bot.store.ports import AuditLog, ChatStore, InterruptRepo, LedgerRepo, RunRepo, Runs, TurnStore
from bot.store.rows import InterruptRow, RunRow
from bot.store.sql.repos.runs import RunStore
from bot.store.sql.store import SqlStore
from tests.fakes.chat_store import FakeChatStore
from tests.fakes.run_repos import FakeRuns

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def make(url_or_fake: str | None, open_store: Callable[..., Awaitable[SqlStore]]) -> Callable[..., Awaitable[Runs]]:
    """``await make()``: the run tables, SQL (on each database) or fake; their ``store`` is the chat store."""

    async def make() -> Runs:
        if url_or_fake is None:
            return FakeRuns(FakeChatStore())
        return RunStore(await open_store(url_or_fake))

    return make


def _typed() -> None:
    """The fake is each of its ports (mypy checks these)."""
    fake = FakeRuns()
    _runs: Runs = fake
    _repo: RunRepo = fake
    _interrupts: InterruptRepo = fake
    _ledger: LedgerRepo = fake
    _audit: AuditLog = fake


def _run(run_id: str, chat: str = "console:a") -> RunRow:
    return RunRow(run_id, chat, "react", "running", f"corr-{run_id}", "u1", reply_to="m1")


def _interrupt(iid: str, run: RunRow) -> InterruptRow:
    return InterruptRow(
        iid, run.chat_key, run.id, "tool_confirm", "Run it?", {"tool": "x"}, [["Approve", "y"]], "n", "u1"
    )


async def _started(runs: Runs, run: RunRow, event: str) -> None:
    """The run starts with its user message, in one commit (as the gateway's stage does)."""
    store: TurnStore = runs.store  # type: ignore[assignment]
    assert await store.accept(
        event, run.chat_key, Message.user("go"), extra=[runs.start_run_step(run, after_message=True)]
    )


async def test_a_run_starts_with_its_turn_pauses_resolves_and_finishes(make: Callable[..., Any]) -> None:
    runs: Runs = await make()
    store: ChatStore = runs.store  # type: ignore[assignment]
    run = _run("r1")
    await _started(runs, run, "e1")
    stored = await runs.get_run("r1")
    assert stored is not None and stored.status == "running" and stored.reply_to == "m1"
    newest = (await store.chat_state(run.chat_key)).last_id
    assert stored.history_cutoff == newest, "its cutoff is the message committed with it"
    assert (await runs.message(newest)) == Message.user("go")

    interrupt = _interrupt("i1", run)
    assert await runs.pending(run.chat_key) is None
    prompt_id = await runs.pause(run, {"agent": "react", "step": 2}, interrupt, '{"text": "Run it?"}')
    paused = await runs.get_run("r1")
    assert paused is not None and paused.status == "paused" and paused.checkpoint == {"agent": "react", "step": 2}
    assert (await runs.pending(run.chat_key)) is interrupt, "the very row, as the chat's pending one was cached"
    assert [i.id for i in await runs.all_pending()] == ["i1"]
    assert [(o.id, o.interrupt_id) for o in await runs.unsent()] == [(prompt_id, "i1")]
    assert [r.id for r in await runs.runs_with_status("paused")] == ["r1"]
    with pytest.raises(StoreError):
        await runs.pause(run, {}, _interrupt("i2", run), "again")
    assert [i.id for i in await runs.all_pending()] == ["i1"], "one pending interrupt per chat"

    await runs.sent(prompt_id, "ref-7", interrupt)
    await runs.store.flush()  # type: ignore[attr-defined]
    assert not await runs.is_unsent(prompt_id) and await runs.unsent() == []
    assert interrupt.prompt_ref == "ref-7"

    assert await runs.resolve(interrupt, "approved", {"choice": "y"}, "u1", run_status="running", event_key="p1")
    assert await runs.resolve(interrupt, "approved", None, "u1") is False, "exactly once"
    assert await runs.resolve(interrupt, "approved", None, "u1", event_key="p1") is None, "the press was seen"
    assert await runs.pending(run.chat_key) is None
    resolved = await runs.get_interrupt("i1")
    assert resolved is not None and (resolved.status, resolved.resolution, resolved.resolved_by) == (
        "approved", {"choice": "y"}, "u1"
    )  # fmt: skip
    assert resolved.prompt_ref == "ref-7"
    latest = await runs.latest_interrupt("r1")
    assert latest is not None and latest.id == "i1"
    resumed = await runs.paused_run("r1")
    assert resumed is not None and resumed.checkpoint == {"agent": "react", "step": 2} and resumed.agent == "react"

    reply = [Message.assistant("done")]
    outbox_id = await runs.finish_run(run, "done", reply, '{"text": "done"}')
    assert outbox_id is not None and await runs.is_unsent(outbox_id)
    assert [m.text for m in await store.history(run.chat_key)] == ["go", "done"]
    finished = await runs.get_run("r1")
    assert finished is not None and finished.status == "done" and finished.checkpoint is None
    assert [(o.id, o.message) for o in await runs.unsent()] == [(outbox_id, '{"text": "done"}')]
    assert await runs.finish_run(_run("r1"), "done", [], None) is None


async def test_a_locked_prompt_is_unlocked_moved_and_reprompted(make: Callable[..., Any]) -> None:
    runs: Runs = await make()
    run = _run("r1")
    await _started(runs, run, "e1")
    interrupt = _interrupt("i1", run)
    await runs.pause(run, "{}", interrupt, "prompt")
    assert await runs.unlock(interrupt, [("Yes", "y"), ("No", "n")], "Really?")
    assert interrupt.choices == [["Yes", "y"], ["No", "n"]] and interrupt.prompt == "Really?"
    runs.set_prompt_ref(interrupt, "ref-2")
    await runs.mark_reprompted(interrupt)
    await runs.store.flush()  # type: ignore[attr-defined]
    stored = await runs.get_interrupt("i1")
    assert stored is not None and (stored.choices, stored.prompt, stored.prompt_ref) == (
        interrupt.choices,
        "Really?",
        "ref-2",
    )
    assert stored.reprompted == interrupt.reprompted == 1
    assert await runs.resolve(interrupt, "expired", None, None)
    assert not await runs.unlock(interrupt, [("Yes", "y")], "late")


async def test_runs_are_written_later_and_found_by_status(make: Callable[..., Any]) -> None:
    runs: Runs = await make()
    runs.start_run_later(_run("r1"))
    runs.start_run_later(_run("r2", "console:b"))
    runs.set_run_later("r1", status="failed")
    await runs.set_run("r2", agent="other", checkpoint={"n": 1})
    await runs.set_run("nobody", status="done")
    await runs.store.flush()  # type: ignore[attr-defined]
    assert [r.id for r in await runs.runs_with_status("failed", "running")] == ["r1", "r2"], "in the order started"
    second = await runs.get_run("r2")
    assert second is not None and (second.agent, second.checkpoint, second.history_cutoff) == ("other", {"n": 1}, 0)
    assert await runs.get_run("nobody") is None and await runs.runs_with_status("paused") == []


async def test_the_ledger_records_each_call_once(make: Callable[..., Any]) -> None:
    runs: Runs = await make()
    await _started(runs, _run("r1"), "e1")
    first, second = ToolCall(id="c1", name="clock", args={"tz": "UTC"}), ToolCall(id="c2", name="search", args={})
    await runs.ledger_started("r1", first)
    await runs.ledger_started("r1", first)
    await runs.ledger_started("r1", second)
    await runs.ledger_finished("r1", first, ToolResult(call_id="c1", name="clock", content={"now": "noon"}))
    await runs.store.flush()  # type: ignore[attr-defined]
    entry = await runs.ledger_get("r1", "c1")
    assert entry is not None and entry.status == "succeeded" and entry.args == {"tz": "UTC"}
    assert entry.result is not None and entry.result.content == {"now": "noon"}
    started = await runs.ledger_get("r1", "c2")
    assert started is not None and (started.status, started.result) == ("started", None)
    assert await runs.ledger_get("r1", "c3") is None and await runs.ledger_get("r9", "c1") is None
    assert [(e.call_id, e.status) for e in await runs.ledger_entries("r1")] == [("c2", "started"), ("c1", "succeeded")]
    failed = ToolResult(call_id="c2", name="search", content="boom", is_error=True)
    await runs.ledger_finished("r1", second, failed)
    await runs.store.flush()  # type: ignore[attr-defined]
    assert [e.status for e in await runs.ledger_entries("r1")] == ["succeeded", "failed"]


async def test_settings_changes_are_audited(make: Callable[..., Any]) -> None:
    runs: Runs = await make()
    store: TurnStore = runs.store  # type: ignore[assignment]
    await runs.change_setting("cli:admin", "console:a", "strategy", None, "rule")
    await runs.change_setting("cli:admin", "console:a", "strategy", "rule", None)
    await runs.audit("cli:admin", "pairing", "pair", None, "telegram:7")
    assert await store.chat_settings("console:a") == {}
    await runs.change_setting("u1", "console:a", "grants", None, ["clock"])
    assert await store.chat_settings("console:a") == {"grants": ["clock"]}
    assert await store.accept(
        "e1", "console:a", None, extra=[runs.audit_step("u1", "memory", "link", None, ["a", "b"])]
    )
    log = await runs.audit_log()
    assert [(r["actor"], r["scope"], r["name"], r["old"], r["new"]) for r in log] == [
        ("u1", "memory", "link", None, ["a", "b"]),
        ("u1", "console:a", "grants", None, ["clock"]),
        ("cli:admin", "pairing", "pair", None, "telegram:7"),
        ("cli:admin", "console:a", "strategy", "rule", None),
        ("cli:admin", "console:a", "strategy", None, "rule"),
    ], "newest first"
    assert len(await runs.audit_log(2)) == 2
    assert not await store.accept("e1", "console:a", None, extra=[runs.audit_step("u1", "x", "y", None, 1)])
    assert len(await runs.audit_log()) == 5, "a change handed to a write that did not commit is not kept"
