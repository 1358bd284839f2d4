"""Storing the corrections admins make (``/route AGENT`` in a chat, the *Re-route* button of a run in the web
console): one audited setting each under :data:`bot.routing.policy.CORRECTIONS`, which every process reads."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.routing.offline import Correction, normalised
from bot.routing.policy import CORRECTIONS, RoutePolicy

MAX_TEXT = 2000
"""The most of a message kept as an example (a request says what it is about early)."""
MAX_CORRECTIONS = 2000
"""Beyond this many, the oldest correction is replaced (each is an utterance every message is compared with)."""

Change = Callable[[str, str, str, Any, Any], Awaitable[None]]
"""An audited settings change: (actor, scope, name, old, new); ``new=None`` deletes."""


@dataclass(frozen=True)
class Stored:
    correction: Correction
    before: Correction | None
    """The correction of the same message it replaced (another agent), if any."""
    unchanged: bool = False


def as_value(c: Correction) -> dict[str, str]:
    return {"agent": c.agent, "text": c.text, "actor": c.actor, "at": c.at}


async def store(routes: RoutePolicy, change: Change, actor: str, agent: str, text: str) -> Stored:
    """Make ``text`` an example of ``agent`` (replacing a correction of the same message), effective at once here."""
    text = text.strip()[:MAX_TEXT]
    stored = await routes.corrections()
    same = next((c for c in stored if normalised(c.text) == normalised(text)), None)
    if same is not None and same.agent == agent:
        return Stored(same, same, unchanged=True)
    key = same.id if same is not None else _new_id({c.id for c in stored})
    new = Correction(key, agent, text, actor, datetime.now(UTC).isoformat(timespec="seconds"))
    await change(actor, CORRECTIONS, key, as_value(same) if same else None, as_value(new))
    if same is None and len(stored) >= MAX_CORRECTIONS:
        await change(actor, CORRECTIONS, stored[0].id, as_value(stored[0]), None)
    await routes.sync_corrections()  # other processes: at their next message
    return Stored(new, same)


async def forget(routes: RoutePolicy, change: Change, actor: str, key: str) -> Correction | None:
    """Remove correction ``key``; the removed one, or None when there is none."""
    found = next((c for c in await routes.corrections() if c.id == key), None)
    if found is not None:
        await change(actor, CORRECTIONS, key, as_value(found), None)
        await routes.sync_corrections()
    return found


def _new_id(taken: set[str]) -> str:
    while True:
        key = "c" + secrets.token_hex(3)
        if key not in taken:
            return key
