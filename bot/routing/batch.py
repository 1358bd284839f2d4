"""The messages routed in one turn of the event loop, encoded together.

The sentence encoder's cost per sentence falls with the batch (a batch of 16 costs under half as much a sentence
as one alone: bench/README.md, "The sentence encoder"), and a busy gateway routes many messages at once: each asks
:meth:`EncodeBatch.vector` and awaits; the first one of a turn schedules the encoding for the end of that turn, and
every request asked before then is encoded in the same call.  A message alone waits one loop turn, nothing else.
A request may name the space it is to be placed in (:meth:`EncodeBatch.placed`): the batch's vectors of one
space are then compared with its corpus and agents in one matrix product too (:meth:`Space.evidence_many`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from bot.routing.encoder import Encoder

MAX_BATCH = 64
"""At most this many sentences in one call (beyond it the cost a sentence no longer falls)."""


class Places(Protocol):
    """Where vectors are placed (:class:`bot.routing.meaning.Space`)."""

    def evidence_many(self, vectors: Any) -> Sequence[Any]: ...


class EncodeBatch:
    """Encodes the requests asked within one loop turn in one call of ``encoder``."""

    def __init__(self, encoder: Encoder, max_batch: int = MAX_BATCH) -> None:
        self.encoder = encoder
        self.max_batch = max_batch
        self._texts: list[str] = []
        self._waiting: list[asyncio.Future[Any]] = []
        self._spaces: list[Places | None] = []
        self.calls = 0
        """Calls of the encoder so far (with :attr:`encoded`: the mean batch, for tests and benchmarks)."""
        self.encoded = 0

    def vector(self, text: str) -> asyncio.Future[Any]:
        """``text``'s vector, once the turn's batch is encoded."""
        return self.placed(text, None)

    def placed(self, text: str, space: Places | None) -> asyncio.Future[Any]:
        """``(vector, space.evidence_many([vector])[0])`` for ``text`` once the turn's batch is encoded (the
        vector alone when ``space`` is None)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if not self._texts:
            loop.call_soon(self._encode)
        self._texts.append(text)
        self._waiting.append(future)
        self._spaces.append(space)
        if len(self._texts) >= self.max_batch:
            self._encode()
        return future

    def _encode(self) -> None:
        texts, waiting, spaces = self._texts, self._waiting, self._spaces
        if not texts:
            return  # a full batch went already; this turn's callback finds nothing left
        self._texts, self._waiting, self._spaces = [], [], []
        self.calls += 1
        self.encoded += len(texts)
        try:
            vectors = self.encoder.encode(texts)
        except Exception as exc:  # every waiter hears it (the router falls back to the triggers)
            for future in waiting:
                if not future.done():
                    future.set_exception(exc)
            return
        results: list[Any] = list(vectors)
        for space in {id(s): s for s in spaces if s is not None}.values():
            rows = [i for i, s in enumerate(spaces) if s is space]
            try:
                placed = space.evidence_many(vectors[rows])
            except Exception as exc:  # those waiters hear it; the others have their vectors
                for i in rows:
                    results[i] = exc
                continue
            for i, evidence in zip(rows, placed, strict=True):
                results[i] = (vectors[i], evidence)
        for future, result in zip(waiting, results, strict=True):
            if future.done():  # a cancelled request
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)
