"""``/pair`` and ``/unpair`` (admins): let a stranger in with the code they were given, list who waits and who was
let in, let one out again (see :mod:`bot.pairing`)."""

from __future__ import annotations

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.events import OutboundMessage
from bot.pairing import Pairing

USAGE = "Usage: /pair (who waits, who was let in) | /pair CODE | /unpair CHANNEL:USER_ID"


def register_pairing_commands(ctx: CommandContext, pairing: Pairing) -> None:
    """Add ``/pair`` and ``/unpair`` to ``ctx.commands``."""

    async def pair(call: CommandCall) -> str:
        args = call.argv
        if not args:
            return await pairing.listing()
        if len(args) != 1:
            return USAGE
        approval = await pairing.approve(args[0], call.event.sender.id)
        if approval.tell is None:
            return approval.reply
        await ctx.delivery.send(OutboundMessage(chat=call.event.chat, text=approval.reply, reply_to=call.event.id))
        await ctx.delivery.send(approval.tell)  # then the person let in, in their chat
        return ""

    async def unpair(call: CommandCall) -> str:
        args = call.argv
        if len(args) != 1:
            return USAGE
        account = args[0] if ":" in args[0] else f"{call.event.chat.channel}:{args[0]}"
        channel, _, user = account.partition(":")
        section = getattr(ctx.settings.channels, channel, None)
        if await pairing.revoke(account, call.event.sender.id):
            return f"Unpaired {account}: they are a stranger here again."
        if section is not None and (user in section.allow_from or user in section.admins):
            return f"{account} was not let in by pairing: it is in channels.{channel}.allow_from or admins."
        return f"{account} was not paired; /pair lists who was."

    ctx.commands.add("pair", pair, "let someone in with the code they were given; who waits", admin=True,
                     usage="[CODE]")  # fmt: skip
    ctx.commands.add("unpair", unpair, "let someone paired out again", admin=True, usage="CHANNEL:USER_ID")
