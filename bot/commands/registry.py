"""Chat commands: a small registry and the built-in commands.

A message is a command when its first word starts with ``/``; ``/help@botname``
is the same as ``/help``.  Commands never reach an agent and never resolve an
interrupt.  Admin commands refuse everyone else and change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.events import InboundMessage

_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_]*)(?:@(\S+))?(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class CommandCall:
    """One parsed command as its handler sees it."""

    name: str
    args: str
    event: InboundMessage

    @property
    def argv(self) -> list[str]:
        return self.args.split()


CommandHandler = Callable[[CommandCall], Awaitable[str]]


@dataclass(frozen=True)
class Command:
    name: str
    handler: CommandHandler
    help: str
    admin: bool = False
    usage: str = ""


def parse_command(text: str, bot_names: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """``(name, args)`` when ``text`` is a command for this bot, else None.

    ``/cmd@otherbot`` (a command for another bot in a group) is not ours.
    """
    match = _COMMAND.match(text.strip())
    if not match:
        return None
    name, target, args = match.group(1).lower(), match.group(2), match.group(3) or ""
    if target and bot_names and target.lower() not in bot_names:
        return None
    return name, args.strip()


@dataclass
class CommandRegistry:
    """Commands by name, in registration order (the order ``/help`` lists them)."""

    commands: dict[str, Command] = field(default_factory=dict)

    def add(self, name: str, handler: CommandHandler, help: str, *, admin: bool = False, usage: str = "") -> None:
        self.commands[name] = Command(name, handler, help, admin, usage)

    def get(self, name: str) -> Command | None:
        return self.commands.get(name)

    def help_text(self, is_admin: bool, prefix: str = "/") -> str:
        """The commands one may use; ``prefix`` is how they are typed (Slack: ``/bot `` before each)."""
        lines = ["Commands:"]
        for cmd in self.commands.values():
            if cmd.admin and not is_admin:
                continue
            usage = f" {cmd.usage}" if cmd.usage else ""
            lines.append(f"{prefix}{cmd.name}{usage} - {cmd.help}{' (admin)' if cmd.admin else ''}")
        return "\n".join(lines)

    async def dispatch(self, call: CommandCall) -> str:
        cmd = self.commands.get(call.name)
        if cmd is None:
            return f"Unknown command /{call.name}. Send /help for the list."
        if cmd.admin and not call.event.sender.is_admin:
            return f"/{call.name} is for admins only; nothing was changed."
        return await cmd.handler(call)
