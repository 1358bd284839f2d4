"""``/usage``: the model tokens and estimated cost you (and this chat) used today and this month, against the
budgets; admins: ``/usage top [month]``, the accounts that used the most."""

from __future__ import annotations

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.ops.budgets import Budgets, Payer

USAGE = "Usage: /usage | admins: /usage top [day|month]"


def register_usage_commands(ctx: CommandContext, budgets: Budgets | None) -> None:
    """Add ``/usage`` to ``ctx.commands`` (when the gateway counts usage)."""
    if budgets is None:
        return

    async def usage(call: CommandCall) -> str:
        args = [a.lower() for a in call.argv]
        event = call.event
        if not args:
            section = getattr(ctx.settings.channels, event.chat.channel, None)
            admin = section is not None and section.is_admin(event.sender.id)
            exempt = ctx.settings.budgets.admins_exempt and admin
            payer = Payer(f"{event.chat.channel}:{event.sender.id}", event.chat.settings_key, exempt)
            return await budgets.report(payer)
        if args[0] == "top" and len(args) <= 2 and (len(args) == 1 or args[1] in ("day", "today", "month")):
            if not event.sender.is_admin:
                return "Only admins see other people's usage (/usage shows yours)."
            return await budgets.top(monthly=len(args) == 2 and args[1] == "month")
        return USAGE

    ctx.commands.add("usage", usage, "model tokens and cost you used today and this month", usage="[top [month]]")
