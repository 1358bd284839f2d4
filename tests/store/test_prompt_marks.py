"""Prompts' sent marks go with the turn's other marks (SQLite with the sent journal): one write for the outbox
deletes and the prompts' references, and the references survive a crash before it commits (the journal lists them).
"""

from __future__ import annotations

from pathlib import Path

from bot.events import ChatKey, OutboundMessage
from bot.store.rows import InterruptRow, RunRow
from bot.store.sql.repos.runs import RunStore
from bot.store.sql.sent_journal import SentJournal
from bot.store.sql.store import SqlStore

CHAT = ChatKey(channel="telegram", chat_id="42")


def _prompt(text: str) -> str:
    return OutboundMessage(chat=CHAT, text=text).model_dump_json()


async def _paused(runs: RunStore, n: int) -> tuple[int, InterruptRow]:
    chat = f"telegram:{n}"  # one pending interrupt a chat
    run = RunRow(f"r{n}", chat, "react", "running", "corr", "u1")
    interrupt = InterruptRow(f"i{n}", chat, f"r{n}", "tool_confirm", "Run it?", {}, [["Approve", "y"]], "n", "u1")
    return await runs.pause(run, {"v": 1}, interrupt, _prompt("Run it?")), interrupt


async def test_the_prompts_marks_of_one_turn_are_one_write(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", exclusive=True)
    await store.start()
    runs = RunStore(store)
    try:
        first, second, third = await _paused(runs, 1), await _paused(runs, 2), await _paused(runs, 3)
        await runs.sent(first[0], "42:1", first[1])  # opens the journal
        await store.flush()
        writes = store.stats()["writes"]
        await runs.sent(second[0], "42:2", second[1])  # the same turn of the loop
        await runs.sent(third[0], "42:3", third[1])
        await store.flush()
        assert store.stats()["writes"] - writes == 2, "both marks in one write, and the flush's own"
        assert third[1].prompt_ref == "42:3", "the cached row has its reference at once"
        rows = await store.read("SELECT id, prompt_ref FROM interrupts ORDER BY id")
        assert rows == [("i1", "42:1"), ("i2", "42:2"), ("i3", "42:3")]
        assert await store.read("SELECT count(*) FROM outbox") == [(0,)]
    finally:
        await store.close()


async def test_a_prompts_reference_listed_before_a_crash_lands_at_the_restart(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", exclusive=True)
    await store.start()
    runs = RunStore(store)
    try:
        outbox, _interrupt = await _paused(runs, 1)
    finally:
        await store.close()
    journal = SentJournal(tmp_path / "bot.db-sent")  # what the dead process left: listed, its mark not committed
    journal.open()
    assert journal.record(outbox, "42:9", "i1")
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", exclusive=True)
    await store.start()
    runs = RunStore(store)
    try:
        assert await runs.unsent() == []
        assert await store.read("SELECT prompt_ref FROM interrupts") == [("42:9",)]
    finally:
        await store.close()
