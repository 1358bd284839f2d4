"""``/memory``: what the bot remembers about you, forgetting it (from everything kept about your requests too),
taking it away as a JSON file, linking your accounts; admins turn memory on or off per chat and may link two
accounts. Nobody reads another person's memories through the chat."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.events import OutboundFile, OutboundMessage
from bot.ids import new_id
from bot.memory.forgetting import Forgotten
from bot.memory.service import MemoryService, identity_of
from bot.store.values import utcnow

USAGE = (
    "Usage: /memory | /memory forget ID|all | /memory export | /memory link [CODE] | /memory unlink"
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
        if verb == "export" and len(args) == 1:
            return await _export(ctx, memory, call)
        if verb == "link" and len(args) <= 2:
            return await _link(ctx, memory, call, args[1] if len(args) == 2 else None)
        if verb == "link" and len(args) == 3:
            return await _admin_link(ctx, memory, call, args[1], args[2])
        if verb == "unlink" and len(args) == 1:
            unlinked = await memory.unlink(str(call.event.chat), call.event.sender.id)
            if unlinked is None:
                return "This account is not linked to another."
            return "Unlinked: this account starts with no memories; your other accounts keep theirs." + _scrubbed(
                unlinked, "what they remembered"
            )
        if verb in ("on", "off", "default") and len(args) == 1:
            return await _switch(ctx, call, verb)
        return USAGE

    ctx.commands.add(
        "memory",
        memory_,
        "what I remember about you; forget it; export it; link your accounts",
        usage="[forget ID|all | export | link [CODE] | unlink]",
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
    lines.append("Forget one: /memory forget ID, or everything: /memory forget all; a copy: /memory export")
    return "\n".join(lines)


def _scrubbed(report: Forgotten, what: str = "it") -> str:
    """The reply's note on what else a forget changed."""
    if not report.rows:
        return ""
    return f" I also removed {what} from {report.rows} stored records of your requests (traces, history, summaries)."


async def _forget(memory: MemoryService, call: CommandCall, what: str) -> str:
    chat, user = str(call.event.chat), call.event.sender.id
    if what.lower() == "all":
        report = await memory.forget(chat, user, None)
        if not report.memories:
            return "There was nothing to forget."
        return f"Forgotten: {report.memories} memories deleted, from search too." + _scrubbed(report, "them")
    number = what.removeprefix("#")
    if not number.isdigit():
        return "Usage: /memory forget ID|all (the ID is the number /memory shows)"
    report = await memory.forget(chat, user, [int(number)])
    if not report.memories:
        return f"You have no memory #{number}."
    return f"Forgotten: #{number} is deleted, from search too." + _scrubbed(report)


async def _export(ctx: CommandContext, memory: MemoryService, call: CommandCall) -> str:
    """A JSON file of everything remembered about the person, sent to them in a direct chat."""
    if not call.event.is_direct:
        return "What I remember about you is private: send /memory export to me in a direct chat to get the file."
    chat, user = str(call.event.chat), call.event.sender.id
    person = await memory.person(chat, user)
    memories = await memory.memories.newest(person, 1 << 30)
    data: dict[str, Any] = {
        "exported_at": utcnow().isoformat(timespec="seconds") + "Z",
        "account": identity_of(chat, user),
        "linked_accounts": await memory.memories.identities(person),
        "memory_in_this_chat": await memory.enabled(call.event.chat, True),
        "memories": [
            {
                "id": m.id,
                "text": m.text,
                "remembered_at": m.created_at.isoformat(timespec="seconds") + "Z",
                "remembered_in": m.source,
            }
            for m in reversed(memories)
        ],
    }
    folder = ctx.settings.store.data_dir.expanduser() / "media"
    path = folder / f"memory-export-{new_id(12)}.json"
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    await asyncio.to_thread(_write, path, text)
    try:
        ref = await ctx.delivery.send(
            OutboundMessage(
                chat=call.event.chat,
                text=f"What I remember about you: {len(memories)} memories.",
                file=OutboundFile(path=str(path.resolve()), name="memory.json"),
            )
        )
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)  # sent (or not): no copy stays on the server
    if ref is None:
        return "I could not send the file; try again later."
    return "Sent: memory.json, everything I remember about you (/memory forget all deletes it)."


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


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
