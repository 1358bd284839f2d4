"""The outbox entries this process sent whose "sent" mark may not be committed yet (SQLite, one process).

Marking an entry sent is a database write, and until it commits a crash makes the next start send the entry again.
:class:`~bot.delivery.Delivery` hands a channel's committed entries over one at a time, so that at most one of them is
ever in that state; waiting for a commit between two of them, though, would put a round trip through the writer between
any two messages of a channel (measured: see bench/README.md, "Sent marks").  So the moment an entry's send returns, one
line naming it is appended to this file beside the database (``bot.db-sent``): a ``write`` of about 60 bytes, no fsync.
Once ``write`` returns the kernel holds it, so it survives the process being killed (a power cut may lose it: the entry
is then sent again, as it would be without the journal).  The database mark follows in the next group commit, and the
next start marks what the journal lists instead of sending it again.  Lines whose marks are committed are dropped now
and then (:meth:`SentJournal.drop`).

A listed id must always mean the row that was sent: outbox ids are never reused (``AUTOINCREMENT``, migration
0014); the store checks that before it keeps a journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quoted
from pathlib import Path
from typing import TYPE_CHECKING

from bot.store.base import StoreError
from bot.store.sql.ops import Step

if TYPE_CHECKING:
    from bot.store.rows import OutboxRow
    from bot.store.sql.store import SqlStore

log = logging.getLogger(__name__)

DELETE_SENT = "DELETE FROM outbox WHERE id = ?"
SET_PROMPT_REF = "UPDATE interrupts SET prompt_ref = ? WHERE id = ?"
COMPACT_BYTES = 64 * 1024
"""Past this size the journal is rewritten with only the lines whose marks may not be committed."""


@dataclass(frozen=True, slots=True)
class Sent:
    """What a sent entry's mark writes: the platform's reference, and the prompt's interrupt that keeps it."""

    ref: str | None
    interrupt_id: str | None


class SentJournal:
    """Appends to ``path``, reads it back after a restart, and compacts it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._size = 0
        self._listed: dict[int, Sent] = {}
        """Every entry the file lists (read at open, then added to)."""
        self._failed = False
        self._settling: asyncio.Task[None] | None = None
        self._fd: int | None = None
        self._torn = False
        """The last write was cut short (a full disk): the next line starts on a line of its own."""
        self._closer: weakref.finalize[[int], SentJournal] | None = None

    def open(self) -> None:
        """Read what an earlier process left (OSError when the file is there and cannot be read or written)."""
        self._listed = _read(self.path)
        self._reopen()

    def _reopen(self) -> None:
        """Open the file for appending (kept open: an ``open`` and a ``close`` per line cost more than the line's
        ``write``); the descriptor is closed with the journal, or when it is replaced or failed."""
        self.close()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._fd, self._closer = fd, weakref.finalize(self, os.close, fd)
        try:
            self._size = os.fstat(fd).st_size
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        """Close the file (the next :meth:`record` opens it again)."""
        closer, self._closer, self._fd = self._closer, None, None
        if closer is not None:
            with contextlib.suppress(OSError):
                closer()

    def listed(self) -> dict[int, Sent]:
        """The entries the journal lists as sent (their marks committed or not)."""
        return dict(self._listed)

    def record(self, outbox_id: int, ref: str | None, interrupt_id: str | None) -> bool:
        """List ``outbox_id`` as sent; False when the file could not take it (the caller commits the mark instead)."""
        sent = Sent(ref, interrupt_id)
        data = _line(outbox_id, sent).encode()
        if self._torn:  # the last line was cut short: end it, or this one would be read as part of it
            data = b"\n" + data
        try:
            if self._fd is None:
                self._reopen()
            assert self._fd is not None
            written = os.write(self._fd, data)
        except OSError as exc:
            self.close()  # opened afresh for the next line (the file may have been replaced, the disk freed)
            if not self._failed:
                log.warning("outbox: cannot write the sent journal %s (%s); marks are committed first", self.path, exc)
            self._failed = True
            return False
        self._size += written
        self._torn = written != len(data)
        if self._torn:  # a full disk cut the line short: the reader skips it
            return False
        self._failed = False
        self._listed[outbox_id] = sent
        return True

    async def mark_listed(self, store: SqlStore, unsent: list[OutboxRow]) -> list[OutboxRow]:
        """Of ``unsent`` (after a restart), mark those this journal lists (sent before the crash, their marks
        lost) and return the others; then forget the listed (their marks are all committed now)."""
        listed = self.listed()
        sent = [row for row in unsent if row.id in listed]
        try:
            # Committed after every mark queued before it: whatever the journal listed is marked once this returns.
            await store.write([s for row in sent for s in mark_steps(row.id, listed[row.id].ref, row.interrupt_id)])
        except StoreError as exc:  # not sent again all the same; the lines stay for the next try
            log.warning("outbox: %d entries sent before the restart could not be marked yet: %s", len(sent), exc)
        else:
            if sent:
                log.info("outbox: %d entries sent before the restart are marked sent now, not sent again", len(sent))
            self.drop(frozenset(listed))
        return [row for row in unsent if row.id not in listed]

    def settle(self, flush: Callable[[], Awaitable[None]]) -> None:
        """When the file has grown: once every mark queued so far is committed (``flush``), drop what it lists."""
        if self._size <= COMPACT_BYTES or self._settling is not None:
            return
        listed = frozenset(self._listed)

        async def settle() -> None:
            try:
                await flush()
            except Exception as exc:  # the store is closing, or refuses writes: compacted another time
                log.debug("outbox: the sent journal is compacted later (%s)", exc)
                return
            finally:
                self._settling = None
            self.drop(listed)

        self._settling = asyncio.get_running_loop().create_task(settle(), name="sent-journal")

    def drop(self, ids: frozenset[int]) -> None:
        """Forget ``ids`` (their marks are committed), rewriting the file with what is left."""
        left = {i: s for i, s in self._listed.items() if i not in ids}
        if len(left) == len(self._listed):
            return
        text = "".join(_line(i, s) for i, s in left.items())
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(text)
            os.replace(tmp, self.path)  # atomic: a crash leaves the old file or the new one
            self.close()  # the next line goes to the new file
        except OSError as exc:
            log.warning("outbox: could not compact the sent journal %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        self._listed = left
        self._size = len(text.encode())
        self._torn = False


class SentMarks:
    """The "sent" marks the journal lists (replies, and prompts with their references), queued as ONE write per turn
    of the event loop.

    The replies of one group commit are sent in the same turn of the loop; their marks go as one ``executemany`` delete
    (a write and a statement per reply each cost the event loop time: see bench/README.md, "Sent marks"), and the
    prompts' references as one ``executemany`` update.  The journal lists them meanwhile (a prompt's line with its
    reference and interrupt), so a crash before the write commits neither sends them again nor loses a reference
    (:meth:`SentJournal.mark_listed` writes it).  A reference lands a turn later than the prompt's send: the
    interrupt's cached row has it at once, and the only other write of it (a prompt sent again, ``set_prompt_ref``)
    follows a press or a command, which come after that turn.
    """

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self._ids: list[int] = []
        self._refs: list[tuple[str | None, str]] = []
        store.before_flush.append(self.queue)  # a flush covers the marks made before it

    def add(self, outbox_id: int, interrupt_id: str | None = None, ref: str | None = None) -> None:
        """Mark ``outbox_id`` sent; a prompt's ``ref`` lands on ``interrupt_id``."""
        if not self._ids:
            asyncio.get_running_loop().call_soon(self.queue)
        self._ids.append(outbox_id)
        if interrupt_id is not None:
            self._refs.append((ref, interrupt_id))

    def queue(self) -> None:
        """Queue the marks added so far (before a flush that must cover them)."""
        ids, self._ids = self._ids, []
        refs, self._refs = self._refs, []
        if not ids:
            return
        steps = [Step(DELETE_SENT, tuple((i,) for i in ids), many=True)]
        if refs:
            steps.append(Step(SET_PROMPT_REF, tuple(refs), many=True))
        try:
            self.store.write_later(steps, what="sent marks")
        except StoreError as exc:  # the store closed first: the journal still lists them for the next start
            log.debug("outbox: %d sent marks are left to the journal (%s)", len(ids), exc)

    async def flush(self) -> None:
        """Wait until every mark added so far is committed."""
        self.queue()
        await self.store.flush()


async def open_journal(store: SqlStore) -> SentJournal | None:
    """The journal of ``store``'s database; None where it has none: PostgreSQL or a database other processes
    may write, a throw-away database, outbox ids that may be reused (before migration 0014), a folder that
    cannot take the file."""
    if store.dialect != "sqlite" or not store.exclusive or store.read_only or ":///" not in store.url:
        return None
    database = store.url.split(":///", 1)[1]
    if database in ("", ":memory:"):
        return None
    try:
        rows = await store.read("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'outbox'")
    except StoreError as exc:
        log.warning("outbox: no sent journal (%s): each mark is committed before the channel's next message", exc)
        return None
    if not rows or "AUTOINCREMENT" not in str(rows[0][0]).upper():
        return None
    file = Path(database).expanduser()
    journal = SentJournal(file.with_name(file.name + "-sent"))
    try:
        journal.open()
    except OSError as exc:
        log.warning("outbox: no sent journal (%s): each mark is committed before the channel's next message", exc)
        return None
    return journal


def mark_steps(outbox_id: int, ref: str | None, interrupt_id: str | None) -> list[Step]:
    """An outbox entry leaves the outbox once sent; a prompt's reference lands on its interrupt."""
    steps = [Step(DELETE_SENT, (outbox_id,))]
    if interrupt_id is not None:
        steps.append(Step(SET_PROMPT_REF, (ref, interrupt_id)))
    return steps


def _line(outbox_id: int, sent: Sent) -> str:
    """``{"sent":1,"ref":"…","interrupt":null}`` and a newline: what ``json.dumps`` with compact separators writes,
    put together around the C string encoder, a fraction of a JSON encoder's ``encode``
    (measured: see bench/README.md, "Per-message micro-optimisations")."""
    ref, interrupt_id = sent.ref, sent.interrupt_id
    return (
        f'{{"sent":{int(outbox_id):d},"ref":{"null" if ref is None else _quoted(ref)},'
        f'"interrupt":{"null" if interrupt_id is None else _quoted(interrupt_id)}}}\n'
    )


def _read(path: Path) -> dict[int, Sent]:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return {}
    listed: dict[int, Sent] = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
            listed[int(item["sent"])] = Sent(item.get("ref"), item.get("interrupt"))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a full disk or a power cut: its entry is sent again
    return listed
