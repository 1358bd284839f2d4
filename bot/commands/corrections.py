"""``/route AGENT``: an admin says where the chat's last message should have gone; it becomes an example of that
agent, at once and in every process (a stored, audited setting: :data:`bot.routing.policy.CORRECTIONS`).
``/route corrections`` lists them, ``/route forget ID`` removes one."""

from __future__ import annotations

from bot.commands.context import CommandContext
from bot.events import ChatKey
from bot.routing import corrections, parse_target


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
        done = await corrections.store(self.ctx.routes, self.ctx.audit, actor, agent, text)
        key = done.correction.id
        if done.unchanged:
            return f"Already noted: {_quoted(done.correction.text)} goes to @{agent} (correction {key})."
        was = f" (it was for @{done.before.agent})" if done.before is not None else ""
        return (
            f"Noted{was}: {_quoted(done.correction.text)} is now an example of @{agent} (correction {key}); "
            f"messages like it go there from now on. Write @{agent} … to have it answer this one. "
            "/route corrections lists them."
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
        found = await corrections.forget(self.ctx.routes, self.ctx.audit, actor, key)
        if found is None:
            known = ", ".join(sorted(c.id for c in await self.ctx.routes.corrections())[:10]) or "none"
            return f"There is no correction {key!r} (known: {known}). /route corrections lists them."
        return f"Forgot correction {key}: {_quoted(found.text)} is no longer an example of @{found.agent}."


def _quoted(text: str, limit: int = 60) -> str:
    one_line = " ".join(text.split())
    return f"“{one_line if len(one_line) <= limit else one_line[: limit - 1] + '…'}”"
