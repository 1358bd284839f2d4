"""Waiting in tests without racing the wall clock: poll for an outcome, with a generous ceiling.

A busy laptop or a shared CI runner may take many times longer than an idle machine; a test waits for what it
expects to happen, never for a fixed time, and fails (with what it waited for) only after a ceiling that no
healthy run comes near.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

CEILING_S = 60.0
"""How long a test waits for something that takes milliseconds on an idle machine."""


async def eventually(
    check: Callable[[], T | Awaitable[T]], *, timeout: float = CEILING_S, every: float = 0.005, what: str = ""
) -> T:
    """Poll ``check`` (sync or async) until it returns something truthy; that value.  AssertionError after
    ``timeout`` seconds, naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what or check!r}")
        await asyncio.sleep(every)  # polls


def eventually_sync(check: Callable[[], T], *, timeout: float = CEILING_S, every: float = 0.01, what: str = "") -> T:
    """:func:`eventually` for tests without an event loop (subprocesses, files)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what or check!r}")
        time.sleep(every)  # polls


def processes_running(marker: str) -> list[int]:
    """Pids of the processes (of any user, in any namespace) whose command line contains ``marker``."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found


async def progressing(
    count: Callable[[], int], target: int, *, stall_s: float = CEILING_S, every: float = 0.02, what: str = ""
) -> None:
    """Wait until ``count()`` reaches ``target``, however long that takes while it keeps growing; AssertionError
    only when it stopped growing for ``stall_s`` seconds (a burst on a busy machine is slow, not stuck)."""
    last, since = count(), time.monotonic()
    while (now := count()) < target:
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > stall_s:
            raise AssertionError(f"{what or 'progress'} stuck at {now} of {target} for {stall_s:g} s")
        await asyncio.sleep(every)  # polls
