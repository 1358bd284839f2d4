"""``/usage``: the model tokens and estimated cost you (and this chat) used today and this month, against the
budgets; admins: ``/usage top [month]``, the accounts that used the most."""

from __future__ import annotations

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.ops.budgets import Budgets

USAGE = "Usage: /usage | admins: /usage top [day|month]"


def register_usage_commands(ctx: CommandContext, budgets: Budgets | None) -> None:
    """Add ``/usage`` to ``ctx.commands`` (when the gateway counts usage)."""
    if budgets is None:
        return

    async def usage(call: CommandCall) -> str:
        args = [a.lower() for a in call.argv]
        event = call.event
        if not args:
            return await budgets.report(budgets.payer(event.chat, event.sender.id, event.sender.is_admin))
        if args[0] == "top" and len(args) <= 2 and (len(args) == 1 or args[1] in ("day", "today", "month")):
            if not event.sender.is_admin:
                return "Only admins see other people's usage (/usage shows yours)."
            return await budgets.top(monthly=len(args) == 2 and args[1] == "month")
        return USAGE

    ctx.commands.add("usage", usage, "model tokens and cost you used today and this month", usage="[top [month]]")
