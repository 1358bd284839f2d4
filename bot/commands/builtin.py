"""The commands every user has: /start, /help, /whoami, /reset, /cancel, /pending, /permissions, /trace."""

from __future__ import annotations

from bot.access import AccessPolicy
from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.store.values import utcnow
from bot.tracing.recorder import timeline

CANCEL_OWN = " (/cancel stops a request of your own.)"
PAGE_LINES = 20
"""Scheduled messages listed per ``/pending`` page."""


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 5400:
        return f"{int(seconds // 60)} min"
    return f"{seconds / 3600:.1f} h"


def register_builtin_commands(ctx: CommandContext) -> None:
    """Add the built-in commands to ``ctx.commands``."""

    async def start(call: CommandCall) -> str:
        greeting = ctx.settings.bot.greeting or "Hi!"
        return f"{greeting}\nJust write to me, or address an agent with @name (see /agents). Send /help for commands."

    async def help_(call: CommandCall) -> str:
        try:  # Slack's users type /bot help (Slack keeps /help): each channel says how commands are typed
            prefix = ctx.settings.channels.section(call.event.chat.channel).command_prefix()
        except KeyError:  # not a configured channel (the web console)
            prefix = "/"
        return ctx.commands.help_text(call.event.sender.is_admin, prefix=prefix)

    async def whoami(call: CommandCall) -> str:
        ev = call.event
        role = "admin" if ev.sender.is_admin else "user"
        name = f" ({ev.sender.name})" if ev.sender.name else ""
        return f"You are {ev.sender.id}{name}, {role}, in chat {ev.chat}."

    async def reset(call: CommandCall) -> str:
        if not AccessPolicy.may_change_chat(call.event.sender, call.event.is_direct):
            return AccessPolicy.ONLY_ADMIN_IN_GROUP.format(what="clear its history") + CANCEL_OWN
        cancelled = await ctx.interrupts.cancel(call.event.chat, call.event.sender)
        await ctx.store.clear_history(str(call.event.chat))
        if ctx.memory is not None:
            await ctx.memory.forget_chat(str(call.event.chat))
        extra = " The pending request was cancelled." if cancelled else ""
        return f"Session cleared: I forgot this chat's history.{extra}"

    async def cancel(call: CommandCall) -> str:
        if call.argv:
            sender = call.event.sender
            if not await ctx.scheduled.cancel(
                str(call.event.chat), call.argv[0], None if sender.is_admin else sender.id
            ):
                return f"No scheduled message {call.argv[0]!r} of yours is pending here (an admin may cancel anyone's)."
            return f"Scheduled message {call.argv[0]} cancelled."
        row = await ctx.runs.pending(str(call.event.chat))
        if row is None:
            return "Nothing to cancel."
        if not AccessPolicy.may_answer(row.requester, call.event.sender):
            return AccessPolicy.ONLY_REQUESTER.format(what="cancel")
        await ctx.interrupts.cancel(call.event.chat, call.event.sender)
        return "Cancelled."

    async def pending(call: CommandCall) -> str:
        args = call.argv
        if args and (not args[0].isdigit() or int(args[0]) < 1):
            return "Usage: /pending [PAGE]"
        page = int(args[0]) if args else 1
        lines = []
        row = await ctx.runs.pending(str(call.event.chat))
        if row is not None and page == 1:
            age = _age((utcnow() - row.created_at).total_seconds())
            first = row.prompt.splitlines()[0][:200] if row.prompt else row.kind
            lines.append(f"• {row.kind} ({age} ago, asked {row.requester}): {first} (shown again below)")
        scheduled = await ctx.scheduled.pending(str(call.event.chat))
        pages = max(1, -(-len(scheduled) // PAGE_LINES))
        if page > pages:
            return f"There are {pages} page{'s' if pages != 1 else ''} of pending messages here; /pending {pages}."
        for r in scheduled[(page - 1) * PAGE_LINES : page * PAGE_LINES]:
            when = f"{r['due_at']:%Y-%m-%d %H:%M} UTC"
            text = " ".join(r["text"].split())
            text = text if len(text) <= 80 else text[:79] + "…"
            lines.append(f"• scheduled {r['id']} at {when}: {text} (/cancel {r['id']})")
        if pages > 1:
            more = f", /pending {page + 1} for the next" if page < pages else ""
            lines.append(f"Page {page} of {pages} ({len(scheduled)} scheduled messages{more}).")
        if not lines:
            return "Nothing is pending in this chat."
        await ctx.notice(call.event.chat, "Pending:\n" + "\n".join(lines))
        if row is not None and page == 1:
            await ctx.interrupts.show_again(row)  # with its buttons, under the list: answer it there
        return ""

    async def permissions(call: CommandCall) -> str:
        chat = call.event.chat
        grants = await ctx.grants(chat)
        args = call.argv
        if args and args[0] == "revoke":
            if len(args) != 2:
                return "Usage: /permissions revoke TOOL|all"
            target = args[1]
            remaining = [] if target == "all" else [g for g in grants if g != target]
            if remaining == grants:
                return f"{target} was not allowed here."
            await ctx.audit(call.event.sender.id, chat.settings_key, "grants", grants, remaining or None)
            return f"Revoked {target}; tools will ask for confirmation again."
        if args:
            return "Usage: /permissions | /permissions revoke TOOL|all"
        if not grants:
            return "No tool is always allowed in this chat; risky tools ask for confirmation."
        return (
            "Always allowed in this chat (no confirmation): " + ", ".join(grants) + "\nRevoke: /permissions revoke TOOL"
        )

    async def trace(call: CommandCall) -> str:
        tracing = ctx.tracing
        if tracing is None or not tracing.config.enabled:
            return "Tracing is off (tracing.enabled in the configuration)."
        args = call.argv
        if args and (not args[0].isdigit() or not 1 <= int(args[0]) <= 5):
            return "Usage: /trace [N] (the last N requests, 1 to 5)"
        runs = await tracing.runs(str(call.event.chat), int(args[0]) if args else 1)
        if not runs:
            return "No trace yet in this chat: send a request first."
        return "\n\n".join(timeline(events) for events in runs)

    ctx.commands.add("start", start, "introduction")
    ctx.commands.add("help", help_, "this list")
    ctx.commands.add("whoami", whoami, "your id, role and chat")
    ctx.commands.add("reset", reset, "forget this chat's history (and cancel what is pending)")
    ctx.commands.add(
        "cancel", cancel, "cancel the pending request, the running one, or a scheduled message", usage="[ID]"
    )
    ctx.commands.add("pending", pending, "what is waiting for an answer here", usage="[PAGE]")
    ctx.commands.add("permissions", permissions, "tools always allowed here; revoke them", usage="[revoke TOOL]")
    ctx.commands.add("trace", trace, "how your last request was handled: agents, tools, pauses", usage="[N]")
