"""The messages routed in one turn of the event loop, encoded together.

The sentence encoder's cost per sentence falls with the batch (a batch of 16 costs under half as much a sentence
as one alone: bench/README.md, "The sentence encoder"), and a busy gateway routes many messages at once: each asks
:meth:`EncodeBatch.vector` and awaits; the first one of a turn schedules the encoding for the end of that turn, and
every request asked before then is encoded in the same call.  A message alone waits one loop turn, nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.routing.encoder import Encoder

MAX_BATCH = 64
"""At most this many sentences in one call (beyond it the cost a sentence no longer falls)."""


class EncodeBatch:
    """Encodes the requests asked within one loop turn in one call of ``encoder``."""

    def __init__(self, encoder: Encoder, max_batch: int = MAX_BATCH) -> None:
        self.encoder = encoder
        self.max_batch = max_batch
        self._texts: list[str] = []
        self._waiting: list[asyncio.Future[Any]] = []
        self.calls = 0
        """Calls of the encoder so far (with :attr:`encoded`: the mean batch, for tests and benchmarks)."""
        self.encoded = 0

    def vector(self, text: str) -> asyncio.Future[Any]:
        """``text``'s vector, once the turn's batch is encoded."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if not self._texts:
            loop.call_soon(self._encode)
        self._texts.append(text)
        self._waiting.append(future)
        if len(self._texts) >= self.max_batch:
            self._encode()
        return future

    def _encode(self) -> None:
        texts, waiting = self._texts, self._waiting
        if not texts:
            return  # a full batch went already; this turn's callback finds nothing left
        self._texts, self._waiting = [], []
        self.calls += 1
        self.encoded += len(texts)
        try:
            vectors = self.encoder.encode(texts)
        except Exception as exc:  # every waiter hears it (the router falls back to the triggers)
            for future in waiting:
                if not future.done():
                    future.set_exception(exc)
            return
        for future, vector in zip(waiting, vectors, strict=True):
            if not future.done():  # a cancelled request
                future.set_result(vector)
