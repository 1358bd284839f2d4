"""``/memory``: what the bot remembers about you, forgetting it, linking your accounts; admins turn memory
on or off per chat and may link two accounts. Nobody reads another person's memories through the chat."""

from __future__ import annotations

import re

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.memory.service import MemoryService, identity_of

USAGE = (
    "Usage: /memory | /memory forget ID|all | /memory link [CODE] | /memory unlink"
    " | admins: /memory on|off|default, /memory link ACCOUNT ACCOUNT"
)
LISTED = 50
ACCOUNT = re.compile(r"^[a-z][a-z0-9_-]*:\S+$")


def register_memory_commands(ctx: CommandContext) -> None:
    """Add ``/memory`` to ``ctx.commands`` (when the gateway has memory)."""
    memory = ctx.memory
    if memory is None:
        return

    async def memory_(call: CommandCall) -> str:
        args = call.argv
        verb = args[0].lower() if args else "list"
        if verb == "list" and len(args) <= 1:
            return await _list(memory, call)
        if verb == "forget" and len(args) == 2:
            return await _forget(memory, call, args[1])
        if verb == "link" and len(args) <= 2:
            return await _link(ctx, memory, call, args[1] if len(args) == 2 else None)
        if verb == "link" and len(args) == 3:
            return await _admin_link(ctx, memory, call, args[1], args[2])
        if verb == "unlink" and len(args) == 1:
            unlinked = await memory.memories.unlink(_me(call))
            if not unlinked:
                return "This account is not linked to another."
            return "Unlinked: this account starts with no memories; your other accounts keep theirs."
        if verb in ("on", "off", "default") and len(args) == 1:
            return await _switch(ctx, call, verb)
        return USAGE

    ctx.commands.add(
        "memory",
        memory_,
        "what I remember about you; forget it; link your accounts",
        usage="[forget ID|all | link [CODE] | unlink]",
    )


def _me(call: CommandCall) -> str:
    return identity_of(str(call.event.chat), call.event.sender.id)


async def _status(memory: MemoryService, call: CommandCall) -> str:
    on = await memory.enabled(call.event.chat, call.event.is_direct)
    if on:
        return "Memory is on in this chat."
    if not memory.config.enabled:
        return "Memory is off (memory.enabled in the configuration)."
    return "Memory is off in this chat (an admin can turn it on with /memory on)."


async def _list(memory: MemoryService, call: CommandCall) -> str:
    status = await _status(memory, call)
    if not call.event.is_direct:
        return f"{status} What I remember about you is private: send /memory to me in a direct chat to see it."
    person = await memory.person(str(call.event.chat), call.event.sender.id)
    total = await memory.memories.count(person)
    if not total:
        return f"{status} I remember nothing about you yet."
    shown = await memory.memories.newest(person, LISTED)
    lines = [f"{status} What I remember about you ({total}, newest first):"]
    lines += [f"#{m.id} {m.text} ({m.created_at:%Y-%m-%d}, {m.source.split(':', 1)[0]})" for m in shown]
    if total > LISTED:
        lines.append(f"… and {total - LISTED} older ones.")
    accounts = await memory.memories.identities(person)
    if len(accounts) > 1:
        lines.append("Linked accounts: " + ", ".join(accounts))
    lines.append("Forget one: /memory forget ID, or everything: /memory forget all")
    return "\n".join(lines)


async def _forget(memory: MemoryService, call: CommandCall, what: str) -> str:
    person = await memory.person(str(call.event.chat), call.event.sender.id)
    if what.lower() == "all":
        count = await memory.memories.delete(person, None)
        return f"Forgotten: {count} memories deleted, from search too." if count else "There was nothing to forget."
    number = what.removeprefix("#")
    if not number.isdigit():
        return "Usage: /memory forget ID|all (the ID is the number /memory shows)"
    if not await memory.memories.delete(person, [int(number)]):
        return f"You have no memory #{number}."
    return f"Forgotten: #{number} is deleted, from search too."


async def _link(ctx: CommandContext, memory: MemoryService, call: CommandCall, code: str | None) -> str:
    me = _me(call)
    if code is None:
        if not call.event.is_direct:
            return "Ask for a link code in a direct chat with me: whoever has the code gets your memories."
        minutes = memory.config.link_code_minutes
        issued = await memory.memories.issue_code(me, minutes)
        return (
            f"Your link code: {issued}\nWithin {minutes:g} minutes, send /memory link {issued} to me from your "
            "other account (another chat app too); both accounts then share what I remember. Keep it to yourself."
        )
    owner = await memory.memories.code_owner(code)
    if owner is None:
        return "That link code is unknown or expired: ask for a new one with /memory link."
    if owner == me:
        return "That code is for your other account: send it from there."
    person = await memory.memories.link(owner, me, me, code=code)
    if person is None:
        return "That link code is unknown or expired: ask for a new one with /memory link."
    count = await memory.memories.count(person)
    channel, user = owner.split(":", 1)
    return f"Linked with {channel} account {user}: I now remember {count} things about you here too."


async def _admin_link(ctx: CommandContext, memory: MemoryService, call: CommandCall, first: str, second: str) -> str:
    if not call.event.sender.is_admin:
        return "Only admins can link two accounts; link your own with /memory link."
    if not ACCOUNT.match(first) or not ACCOUNT.match(second) or first == second:
        return "Usage: /memory link ACCOUNT ACCOUNT (accounts as channel:user_id, e.g. telegram:42 slack:U123)"
    actor = call.event.sender.id
    audit = ctx.runs.audit_step(actor, "memory", "link", None, [first, second])
    await memory.memories.link(first, second, actor, extra=[audit])
    return f"Linked {first} and {second}: they share one memory now."


async def _switch(ctx: CommandContext, call: CommandCall, verb: str) -> str:
    if not call.event.sender.is_admin:
        return "Only admins can turn memory on or off in a chat."
    chat = call.event.chat
    old = (await ctx.store.chat_settings(chat.settings_key)).get("memory")
    new = None if verb == "default" else verb == "on"
    await ctx.audit(call.event.sender.id, chat.settings_key, "memory", old, new)
    if new is None:
        return "Memory here follows the configuration again (on in direct chats, memory.groups in groups)."
    return f"Memory is {'on' if new else 'off'} in this chat."
