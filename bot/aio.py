"""Small asyncio helpers shared by the gateway's long-running loops."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it to end, cancelling again while it goes on.

    Python 3.11's ``asyncio.wait_for`` can lose a cancellation that arrives just as what it awaits completes;
    a loop around it then carries on and a plain ``cancel(); await task`` waits forever (seen in the Redis
    consumer's balancing loop: about one stop in four hung under load).  Asking again ends it.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.1)
    if not task.cancelled() and task.exception() is not None:
        log.debug("task %s ended with %r while stopping", task.get_name(), task.exception())
