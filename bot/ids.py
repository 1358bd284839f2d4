"""Ids: unguessable ones for what people can press (interrupts, nonces), time-ordered ones for rows.

One :class:`IdSource` holds the little state this needs (a pool of random bytes, the last timestamp
and counter handed out); the module functions use the process's source.
"""

from __future__ import annotations

import os
import random
import secrets
import time
import weakref

_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
_LETTERS = bytes(ord(_ALPHABET[b & 31]) for b in range(256))
"""Byte → letter of the alphabet by its low five bits (a C-level ``translate``)."""


class IdSource:
    def __init__(self) -> None:
        self._reset()
        _SOURCES.add(self)

    def _reset(self) -> None:
        """Fresh state: at creation, and in a forked child (which must not repeat its parent's random sequence;
        an at-fork hook instead of a ``getpid`` per id: that is a system call, a third of an id's cost)."""
        self._pool = bytearray()
        self._last_ms = 0
        self._seq = 0
        self._fast = random.Random(secrets.token_bytes(32))

    def new_id(self, length: int = 10) -> str:
        """An unguessable id over a 32-letter alphabet (button nonces rely on it).

        Bytes come from ``secrets`` in 4 KiB draws: one system call serves hundreds of ids
        (``os.urandom`` costs tens of microseconds on some hosts).
        """
        if len(self._pool) < length:
            self._pool = bytearray(secrets.token_bytes(4096))
        chunk = self._pool[-length:]
        del self._pool[-length:]
        return chunk.translate(_LETTERS).decode("ascii")

    def fast_id(self) -> str:
        """A UUIDv7 (RFC 9562) as 32 lowercase hex digits, for rows nobody can press (runs, trace events).

        48 bits of Unix milliseconds, a 12-bit counter within the millisecond (ids of one source strictly
        increase, even when the clock steps back) and 62 random bits: ids made later sort later, so inserts
        append to the primary-key index, and ids made by different processes or machines at the same
        instant do not collide (2^62 random values per millisecond and counter step).
        """
        stamp = time.time_ns() // 1_000_000
        if stamp > self._last_ms:
            self._last_ms, self._seq = stamp, self._fast.getrandbits(8)  # start low in the 12 bits: room to count
        else:
            self._seq += 1
            if self._seq > 0xFFF:  # 4,096 ids in one millisecond: borrow the next one
                self._last_ms, self._seq = self._last_ms + 1, 0
        value = (self._last_ms << 80) | (0x7 << 76) | (self._seq << 64) | (0b10 << 62) | self._fast.getrandbits(62)
        return value.to_bytes(16).hex()  # 32 lowercase hex digits, half the cost of a format spec


_SOURCES: weakref.WeakSet[IdSource] = weakref.WeakSet()


def _after_fork() -> None:
    for source in list(_SOURCES):
        source._reset()


os.register_at_fork(after_in_child=_after_fork)


_SOURCE = IdSource()


def new_id(length: int = 10) -> str:
    return _SOURCE.new_id(length)


CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""What codes people read aloud and type are made of (pairing, account links): no 0/O or 1/I."""


def new_code(length: int = 8) -> str:
    """A code of ``length`` symbols, each drawn uniformly from all 32 of :data:`CODE_ALPHABET` (5 bits each:
    8 symbols are 40 bits)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def new_nonce() -> str:
    return _SOURCE.new_id(6)


def fast_id() -> str:
    return _SOURCE.fast_id()
