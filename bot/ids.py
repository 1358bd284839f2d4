"""Ids: unguessable ones for what people can press (interrupts, nonces), time-ordered ones for rows.

One :class:`IdSource` holds the little state this needs (a pool of random bytes, the last timestamp
handed out); the module functions use the process's source.
"""

from __future__ import annotations

import random
import secrets
import time

_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
_LETTERS = bytes(ord(_ALPHABET[b & 31]) for b in range(256))
"""Byte → letter of the alphabet by its low five bits (a C-level ``translate``)."""


class IdSource:
    def __init__(self) -> None:
        self._pool = bytearray()
        self._last_stamp = 0
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

    def fast_id(self, length: int = 16) -> str:
        """A unique, time-ordered id for rows nobody can press (runs, trace events): lowercase hex.

        Microseconds since the epoch, 16 hex digits, strictly increasing for this source (a second id
        in the same microsecond, or after the clock stepped back, takes the next one): ids made later
        sort later, so inserts append to the primary-key index.  ``length`` above 16 pads with random
        digits.
        """
        stamp = max(time.time_ns() // 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        text = f"{stamp:016x}"
        if length > 16:
            return text + f"{self._fast.getrandbits(4 * (length - 16)):0{length - 16}x}"
        return text[16 - length :]


_SOURCE = IdSource()


def new_id(length: int = 10) -> str:
    return _SOURCE.new_id(length)


def new_nonce() -> str:
    return _SOURCE.new_id(6)


def fast_id(length: int = 16) -> str:
    return _SOURCE.fast_id(length)
