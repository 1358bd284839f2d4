"""A chat's cached state (:class:`ChatState`): its newest history rows and what the context window and the summary
need of them.  A value of the ports (:class:`~bot.store.ports.ChatReads`): it imports no implementation; the
write-through caches that keep it (:mod:`bot.store.sql.cache`) sit above it."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field

from agents.messages import Message


@dataclass(slots=True)
class ChatState:
    """What the gateway keeps in memory per chat key.

    ``messages`` are the newest rows of the chat's history, oldest first, bounded
    by the store's history limit; ``ids`` are their row ids (kept apart so a
    read is one C-level copy).
    """

    messages: deque[Message]
    ids: deque[int]
    last_id: int = 0
    sizes: deque[int] = field(default_factory=deque)
    """``Message.size()`` of each message, computed once (the context window is cut by it)."""
    total: int = 0
    """The sum of ``sizes``: when everything fits, the window needs no walk over the messages."""
    summary: str | None = None
    """The chat's running summary (:mod:`bot.memory.summary`); None: not read yet."""
    summary_upto: int = 0
    """The newest history row the summary covers."""
    covered: int = 0
    """How many of the oldest ``messages`` the summary covers (ids up to ``summary_upto``), and their size below:
    kept as messages come and go, so that neither the window nor the check for a fold walks them (a long chat's
    summarised turns were a large share of ``bench/gateway.py`` to walk once chats had a summary; measured: see
    bench/README.md, "The store's caches")."""
    covered_size: int = 0
    media: int = 0
    """How many of ``messages`` carry files: when no more than a model is shown, nothing needs leaving out (a walk
    over the history per run saved; measured: see bench/README.md, "The store's caches")."""

    @classmethod
    def loaded(cls, rows: list[tuple[int, Message]], limit: int) -> ChatState:
        sizes = deque((m.size() for _, m in rows), maxlen=limit)
        return cls(
            deque((m for _, m in rows), maxlen=limit),
            deque((i for i, _ in rows), maxlen=limit),
            rows[-1][0] if rows else 0,
            sizes=sizes,
            total=sum(sizes),
            media=sum(1 for _, m in rows[-limit:] if m.media) if limit else 0,
        )

    def window(self, before_id: int, max_chars: int, after_id: int = 0) -> list[Message]:
        """The newest messages with ids below ``before_id`` (and above ``after_id``: the chat's summary covers
        those) that fit in ``max_chars``, starting at a user turn.

        The same cut as :func:`agents.messages.fit_context`, on the cached sizes.
        """
        ids, sizes = self.ids, self.sizes
        end = len(ids)
        later = 0
        while end and ids[end - 1] >= before_id:
            end -= 1
            later += sizes[end]
        first = 0
        if after_id and ids and ids[0] <= after_id:
            if after_id == self.summary_upto and self.covered <= end:
                first = self.covered  # the summary's turns, counted as they came and went
                later += self.covered_size
            while first < end and ids[first] <= after_id:
                later += sizes[first]
                first += 1
        if self.total - later <= max_chars:
            start = first  # all of it fits: the common case, no walk
        else:
            total, start = 0, end
            for i in range(end - 1, first - 1, -1):  # newest first; a deque indexes its ends in O(1)
                total += sizes[i]
                if total > max_chars and start < end:
                    break
                start = i
        messages = self.messages
        while start < end and messages[start].role != "user":
            start += 1
        return _between(messages, start, end)

    def own_window(self, before_id: int, agent: str, max_chars: int) -> list[Message]:
        """An isolated agent's window: of the messages with ids below ``before_id``, the turns ``agent`` answered
        (each user message with the replies that followed it), the newest that fit in ``max_chars``, starting at
        a user turn: ``fit_context(own_turns(...), max_chars)`` (:func:`bot.runs.context.own_turns`), in one walk
        from the newest end on the cached sizes that stops once the budget is full (measured: see
        bench/README.md, "Per-message micro-optimisations")."""
        ids, sizes = self.ids, self.sizes
        end = len(ids)
        while end and ids[end - 1] >= before_id:
            end -= 1
        picked: list[Message] = []  # newest first
        picked_sizes: list[int] = []
        total = 0
        replies = own = False  # the turn being walked: its replies seen, one of them by ``agent``
        turn: list[Message] = []
        turn_sizes: list[int] = []
        newest = itertools.islice(zip(reversed(self.messages), reversed(sizes), strict=True), len(ids) - end, None)
        for message, size in newest:
            if message.role == "user":
                replies = False
            else:
                if not replies:  # the replies of an earlier turn: the one walked so far is whole
                    if own:
                        picked += turn
                        picked_sizes += turn_sizes
                        total += sum(turn_sizes)
                        if total > max_chars and len(picked) > 1:
                            break
                    turn, turn_sizes, replies, own = [], [], True, False
                own = own or message.agent == agent
            turn.append(message)
            turn_sizes.append(size)
        else:
            if own:
                picked += turn
                picked_sizes += turn_sizes
        # fit_context's cut, newest first, on the cached sizes
        total, keep = 0, 0
        for i, size in enumerate(picked_sizes):
            total += size
            if total > max_chars and keep:
                break
            keep = i + 1
        while keep and picked[keep - 1].role != "user":
            keep -= 1
        out = picked[:keep]
        out.reverse()
        return out

    def add(self, row_id: int, message: Message) -> None:
        # Ids grow in commit order (one writer), so an id at or below the last one
        # is a row the load already saw.
        if row_id > self.last_id:
            sizes = self.sizes
            if sizes.maxlen is not None and len(sizes) == sizes.maxlen:
                self.total -= sizes[0]  # the oldest leaves the bounded deques
                if self.covered:
                    self.covered -= 1
                    self.covered_size -= sizes[0]
                if self.messages[0].media:
                    self.media -= 1
            if message.media:
                self.media += 1
            size = message.size()
            self.messages.append(message)
            self.ids.append(row_id)
            sizes.append(size)
            self.total += size
            self.last_id = row_id

    def summarised(self, summary: str, upto_id: int) -> None:
        """The chat's summary is ``summary`` now, covering the rows up to ``upto_id``."""
        self.summary, self.summary_upto = summary, upto_id
        count = size = 0
        for row_id, row_size in zip(self.ids, self.sizes, strict=True):
            if row_id > upto_id:
                break
            count += 1
            size += row_size
        self.covered, self.covered_size = count, size

    def clear(self) -> None:
        self.messages.clear()
        self.ids.clear()
        self.sizes.clear()
        self.total = 0
        self.media = 0
        self.summary = None
        self.covered = self.covered_size = 0
        # SQLite may reuse the ids of deleted rows, so the next id may be smaller.
        self.last_id = 0

    def newest(self, n: int) -> list[Message]:
        if n >= len(self.messages):
            return list(self.messages)
        return list(itertools.islice(self.messages, len(self.messages) - n, None))


_TRIMMED = 48
"""At most this many messages outside a window are copied with it and then dropped (see :func:`_between`)."""


def _between(messages: deque[Message], start: int, end: int) -> list[Message]:
    """``messages[start:end]`` as a list.

    Every message copied is a cache miss on a long chat's cold history (its reference count is touched), and a
    list made from an ``islice`` grows as it fills: ``list(islice(messages, start, end))`` also walked the
    ``start`` messages before the window.  The whole deque copied at its known length, with the few left out
    dropped, costs less, and a window after a summary, copied from the right end, touches only its own messages
    (measured: see bench/README.md, "Per-message micro-optimisations").
    """
    n = len(messages)
    if start + n - end <= _TRIMMED:
        out = list(messages)
        del out[end:]
        del out[:start]
        return out
    out = list(itertools.islice(reversed(messages), n - end, n - start))
    out.reverse()
    return out
