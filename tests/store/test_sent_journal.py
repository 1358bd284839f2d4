"""The sent journal: what a process sent before it died, its marks not committed yet, is marked at the next start
instead of being sent again; what it never sent is sent; outbox ids never come back (migration 0014), so a
listed id is always the entry that was sent."""

from __future__ import annotations

from pathlib import Path

from bot.events import ChatKey, OutboundMessage
from bot.store.rows import InterruptRow, RunRow
from bot.store.sql.ops import outbox_step
from bot.store.sql.repos.runs import RunStore
from bot.store.sql.sent_journal import COMPACT_BYTES, SentJournal
from bot.store.sql.store import SqlStore
from tests.waiting import eventually

CHAT = ChatKey(channel="telegram", chat_id="42")


def message(text: str) -> str:
    return OutboundMessage(chat=CHAT, text=text).model_dump_json()


async def started(tmp_path: Path, *, exclusive: bool = True) -> tuple[SqlStore, RunStore]:
    store = SqlStore(f"sqlite:///{tmp_path / 'bot.db'}", exclusive=exclusive)
    await store.start()
    return store, RunStore(store)


async def commit_entry(store: SqlStore, text: str, interrupt_id: str | None = None) -> int:
    result = await store.write([outbox_step(str(CHAT), message(text), interrupt_id)])
    return int(result.rows[0][0])


async def test_an_entry_sent_before_the_crash_is_marked_not_sent_again(tmp_path: Path) -> None:
    store, runs = await started(tmp_path)
    try:
        run = RunRow("r1", str(CHAT), "react", "running", "corr", "u1")
        interrupt = InterruptRow("i1", str(CHAT), "r1", "tool_confirm", "Run it?", {}, [["Approve", "y"]], "n", "u1")
        outbox = await runs.pause(run, {"v": 1}, interrupt, message("Run it?"))
        reply = await commit_entry(store, "done")
        never_sent = await commit_entry(store, "later")
    finally:
        await store.close()
    # What the dead process left: the prompt and the reply went out (the journal lists them), their marks never
    # made it to the database.
    journal = SentJournal(tmp_path / "bot.db-sent")
    journal.open()
    assert journal.record(outbox, "42:700", "i1") and journal.record(reply, "42:701", None)

    store, runs = await started(tmp_path)
    try:
        assert [row.id for row in await runs.unsent()] == [never_sent], "only what never went out is sent again"
        assert await store.read("SELECT id FROM outbox") == [(never_sent,)]
        assert await store.read("SELECT prompt_ref FROM interrupts WHERE id = 'i1'") == [("42:700",)]
        reread = SentJournal(tmp_path / "bot.db-sent")
        reread.open()
        assert reread.listed() == {}, "its lines are dropped once the marks are committed"
        # A sent row is deleted, and the next entry still gets a new id (an empty outbox used to hand out 1 again).
        await runs.sent(never_sent, "42:702")
        await store.flush()
        assert await commit_entry(store, "next") > never_sent
    finally:
        await store.close()


async def test_sent_returns_once_the_journal_lists_the_entry_and_the_mark_follows(tmp_path: Path) -> None:
    store, runs = await started(tmp_path)
    try:
        entry = await commit_entry(store, "hello")
        await runs.sent(entry, "42:1")
        journal = SentJournal(tmp_path / "bot.db-sent")
        journal.open()
        assert entry in journal.listed(), "a crash from here on does not send it again"
        await store.flush()
        assert await store.read("SELECT count(*) FROM outbox") == [(0,)]
    finally:
        await store.close()


async def test_without_a_journal_sent_returns_once_the_mark_is_committed(tmp_path: Path) -> None:
    """A database other processes may write (``exclusive`` off, as PostgreSQL always is) keeps no journal."""
    store, runs = await started(tmp_path, exclusive=False)
    try:
        entry = await commit_entry(store, "hello")
        await runs.sent(entry, "42:1")
        assert await store.read("SELECT count(*) FROM outbox") == [(0,)]
        assert not (tmp_path / "bot.db-sent").exists()
    finally:
        await store.close()


async def test_the_journal_keeps_only_lines_whose_marks_may_be_uncommitted(tmp_path: Path) -> None:
    store, runs = await started(tmp_path)
    path = tmp_path / "bot.db-sent"
    try:
        entries = [
            int(r[0]) for r in (await store.write([outbox_step(str(CHAT), message(f"m{i}")) for i in range(1500)])).rows
        ]
        for entry in entries:
            await runs.sent(entry, f"42:{entry}")
        await eventually(lambda: path.stat().st_size < COMPACT_BYTES, what="the journal compacted")
        assert await store.read("SELECT count(*) FROM outbox") == [(0,)]
    finally:
        await store.close()
    assert path.stat().st_size < COMPACT_BYTES


def test_lines_after_a_compaction_go_to_the_new_file(tmp_path: Path) -> None:
    """The journal keeps its file open between lines; compacting replaces the file, and the next line must land in
    the new one (not in the replaced file nobody reads)."""
    path = tmp_path / "bot.db-sent"
    journal = SentJournal(path)
    journal.open()
    assert journal.record(1, "42:1", None) and journal.record(2, "42:2", "i2")
    journal.drop(frozenset({1}))
    assert journal.record(3, "42:3", None)
    reread = SentJournal(path)
    reread.open()
    assert sorted(reread.listed()) == [2, 3]
    journal.close()
    assert journal.record(4, "42:4", None), "a closed journal opens its file again for the next line"
    reread.open()
    assert sorted(reread.listed()) == [2, 3, 4]
    journal.close()
    reread.close()


def test_a_line_cut_short_by_a_full_file_does_not_swallow_the_next(tmp_path: Path) -> None:
    """A write the file system cuts short (here the process's file size limit, as a full disk would) leaves half a
    line, which the reader skips; the next line must start on a line of its own, or it is skipped with it."""
    import resource
    import signal

    path = tmp_path / "bot.db-sent"
    journal = SentJournal(path)
    journal.open()
    assert journal.record(1, "42:1", None)
    size = path.stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write, not a killed process
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 20, hard))
        assert not journal.record(2, "42:2", None), "cut short: the caller commits the mark instead"
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert path.stat().st_size == size + 20
    assert journal.record(3, "42:3", None)
    reread = SentJournal(path)
    reread.open()
    assert sorted(reread.listed()) == [1, 3]
    journal.close()
    reread.close()
