"""The outbox of the run tables: replies committed before they are sent, removed once sent (a crash between the
two sends them again, once: the sent journal, :mod:`bot.store.sql.sent_journal`, lists what was sent)."""

from __future__ import annotations

import asyncio

from bot.store.rows import InterruptRow, OutboxRow
from bot.store.sql.sent_journal import SentJournal, SentMarks, mark_steps, open_journal
from bot.store.sql.store import SqlStore


class OutboxTable:
    """The outbox part of :class:`~bot.store.sql.repos.runs.RunStore` (one of its bases)."""

    store: SqlStore
    _marks: SentMarks
    _opening_journal: asyncio.Future[SentJournal | None]

    async def sent(
        self, outbox_id: int, ref: str | None, interrupt: InterruptRow | str | None = None, *, wait: bool = False
    ) -> None:
        """An outbox entry was sent: it is removed; a prompt's message reference is kept on its interrupt.

        The outbox holds only what is committed and not yet sent, so it stays a few
        rows long however long the bot runs (marking rows sent grew it forever).
        ``interrupt``: the prompt's interrupt row (its cached copy learns the reference at
        once, for a press that comes right after) or only its id (after a restart).

        Returns once a crash of this process would not send the entry again: once the SQLite database's sent
        journal lists it (:mod:`bot.store.sql.sent_journal`; the mark follows in the next group commit), else once
        the mark is committed.  ``wait``: committed in any case (a gateway marking for a worker, whose next
        owner asks the database).  A mark waited for goes ahead of the queue, alone or with other marks: the
        rows it touches are committed already, so it may pass writes queued before it.
        """
        interrupt_id = interrupt if interrupt is None or isinstance(interrupt, str) else interrupt.id
        if isinstance(interrupt, InterruptRow):
            # The cache holds this very row: the database follows in write order.
            interrupt.prompt_ref = ref
        journal = None if wait else await self._journal()
        if journal is not None and journal.record(outbox_id, ref, interrupt_id):
            self._marks.add(outbox_id, interrupt_id, ref)
            journal.settle(self._marks.flush)
            return
        await self.store.write(mark_steps(outbox_id, ref, interrupt_id), first=True)

    async def is_unsent(self, outbox_id: int) -> bool:
        """Whether the outbox entry is still waiting to be sent (not sent and marked by anyone yet)."""
        return bool(await self.store.read("SELECT 1 FROM outbox WHERE id = ?", (outbox_id,)))

    async def unsent(self) -> list[OutboxRow]:
        """Entries committed and not sent, oldest first (what the sent journal lists was sent: it is marked now)."""
        rows = await self.store.read(
            "SELECT id, chat_key, message, interrupt_id FROM outbox WHERE status = 'pending' ORDER BY id"
        )
        unsent = [OutboxRow(*r) for r in rows]
        journal = await self._journal()
        return unsent if journal is None else await journal.mark_listed(self.store, unsent)

    async def _journal(self) -> SentJournal | None:
        opening = getattr(self, "_opening_journal", None)
        if opening is None:
            opening = self._opening_journal = asyncio.ensure_future(open_journal(self.store))
        return await opening
