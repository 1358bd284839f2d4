"""``/route AGENT``: an admin says where the chat's last message should have gone; it becomes an example of that
agent, at once and in every process (a stored, audited setting: :data:`bot.routing.policy.CORRECTIONS`).
``/route corrections`` lists them, ``/route forget ID`` removes one."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from bot.commands.context import CommandContext
from bot.events import ChatKey
from bot.routing import parse_target
from bot.routing.offline import normalised
from bot.routing.policy import CORRECTIONS

MAX_TEXT = 2000
"""The most of a message kept as an example (a request says what it is about early)."""
MAX_CORRECTIONS = 2000
"""Beyond this many, the oldest correction is replaced (each is an utterance every message is compared with)."""


class Corrections:
    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx

    async def _last_request(self, chat: ChatKey) -> str | None:
        """The chat's last message that was routed (not an ``@agent`` one, not a command)."""
        for message in reversed(await self.ctx.store.history(str(chat), 50)):
            if message.role != "user" or not message.text:
                continue
            text = message.text.strip()
            if text.startswith("/"):
                continue
            targeting = parse_target(text, self.ctx.routes.catalog.agents)
            return None if targeting.agent is not None else targeting.text or None
        return None

    async def add(self, chat: ChatKey, actor: str, agent: str) -> str:
        text = await self._last_request(chat)
        if text is None:
            return "There is no routed message here to correct yet (a message addressed with @name was not routed)."
        text = text[:MAX_TEXT]
        stored = await self.ctx.routes.corrections()
        same = next((c for c in stored if normalised(c.text) == normalised(text)), None)
        if same is not None and same.agent == agent:
            return f"Already noted: {_quoted(text)} goes to @{agent} (correction {same.id})."
        key = same.id if same is not None else _new_id({c.id for c in stored})
        old = {"agent": same.agent, "text": same.text, "actor": same.actor, "at": same.at} if same else None
        at = datetime.now(UTC).isoformat(timespec="seconds")
        await self.ctx.audit(actor, CORRECTIONS, key, old, {"agent": agent, "text": text, "actor": actor, "at": at})
        if same is None and len(stored) >= MAX_CORRECTIONS:
            oldest = stored[0]
            await self.ctx.audit(actor, CORRECTIONS, oldest.id, {"agent": oldest.agent, "text": oldest.text}, None)
        await self.ctx.routes.sync_corrections()  # effective at once (other processes: at their next message)
        was = f" (it was for @{same.agent})" if same is not None else ""
        return (
            f"Noted{was}: {_quoted(text)} is now an example of @{agent} (correction {key}); messages like it go there"
            f" from now on. Write @{agent} … to have it answer this one. /route corrections lists them."
        )

    async def listing(self) -> str:
        stored = await self.ctx.routes.corrections()
        if not stored:
            return (
                "No routing corrections yet. After a wrong route, /route AGENT makes the message an example of AGENT."
            )
        lines = [f"Routing corrections ({len(stored)}), oldest first:"]
        for c in stored:
            lines.append(f"{c.id} → @{c.agent}: {_quoted(c.text)} (by {c.actor or '?'}, {c.at or '?'})")
        lines.append("/route forget ID removes one.")
        return "\n".join(lines)

    async def forget(self, actor: str, key: str) -> str:
        stored = {c.id: c for c in await self.ctx.routes.corrections()}
        found = stored.get(key)
        if found is None:
            known = ", ".join(sorted(stored)[:10]) or "none"
            return f"There is no correction {key!r} (known: {known}). /route corrections lists them."
        await self.ctx.audit(actor, CORRECTIONS, key, {"agent": found.agent, "text": found.text}, None)
        await self.ctx.routes.sync_corrections()
        return f"Forgot correction {key}: {_quoted(found.text)} is no longer an example of @{found.agent}."


def _new_id(taken: set[str]) -> str:
    while True:
        key = "c" + secrets.token_hex(3)
        if key not in taken:
            return key


def _quoted(text: str, limit: int = 60) -> str:
    one_line = " ".join(text.split())
    return f"“{one_line if len(one_line) <= limit else one_line[: limit - 1] + '…'}”"
