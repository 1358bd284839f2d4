"""The commands every user has: /start, /help, /whoami, /reset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands import CommandCall

if TYPE_CHECKING:
    from bot.supervisor import Supervisor


def register_builtin_commands(sup: Supervisor) -> None:
    """Add the built-in commands to ``sup.commands``."""

    async def start(call: CommandCall) -> str:
        greeting = sup.settings.bot.greeting or "Hi!"
        return f"{greeting}\nJust write to me. Send /help for commands."

    async def help_(call: CommandCall) -> str:
        return sup.commands.help_text(call.event.sender.is_admin)

    async def whoami(call: CommandCall) -> str:
        ev = call.event
        role = "admin" if ev.sender.is_admin else "user"
        name = f" ({ev.sender.name})" if ev.sender.name else ""
        return f"You are {ev.sender.id}{name}, {role}, in chat {ev.chat}."

    async def reset(call: CommandCall) -> str:
        await sup.store.clear_history(str(call.event.chat))
        return "Session cleared: I forgot this chat's history."

    sup.commands.add("start", start, "introduction")
    sup.commands.add("help", help_, "this list")
    sup.commands.add("whoami", whoami, "your id, role and chat")
    sup.commands.add("reset", reset, "forget this chat's history")
