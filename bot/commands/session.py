"""The commands people expect from other chat bots (nanobot, Hermes, OpenClaw): ``/new`` (a fresh conversation),
``/status`` (model, agent, routing, queue, pending, usage today), ``/model`` (the configured models; admins switch
this chat's) and ``/stop`` (the running request)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.access import AccessPolicy
from bot.commands.admin import last_route
from bot.commands.builtin import CANCEL_OWN
from bot.commands.context import CommandContext
from bot.commands.registry import CommandCall
from bot.config.settings import ConfigError
from bot.models import ModelCatalog, parse_spec
from bot.ops.budgets import Budgets
from bot.store.values import utcnow

MODEL_SETTING = "model"
"""The chat setting (per ``channel:chat_id``) naming the model its runs use; the run manager reads it."""


def register_session_commands(
    ctx: CommandContext,
    models: ModelCatalog,
    queued: Callable[[str], Awaitable[int]],
    budgets: Budgets | None,
) -> None:
    """Add ``/new``, ``/status``, ``/model`` and ``/stop`` to ``ctx.commands``; ``queued``: a chat's events waiting or
    in flight (the bus)."""

    async def new(call: CommandCall) -> str:
        chat = call.event.chat
        if not AccessPolicy.may_change_chat(call.event.sender, call.event.is_direct):
            return AccessPolicy.ONLY_ADMIN_IN_GROUP.format(what="start a new conversation") + CANCEL_OWN
        cancelled = await ctx.interrupts.cancel(chat, call.event.sender)
        await ctx.store.clear_history(str(chat))
        if ctx.memory is not None:
            await ctx.memory.forget_chat(str(chat))
        extra = " The request that was waiting here is cancelled." if cancelled else ""
        kept = " What I remember about you stays (/memory)." if ctx.memory is not None else ""
        return f"🆕 New conversation: I start afresh here, without this chat's history.{extra}{kept}"

    async def status(call: CommandCall) -> str:
        event = call.event
        chat = event.chat
        lines = [f"Status of {chat}:"]
        chosen = (await ctx.store.chat_settings(chat.settings_key)).get(MODEL_SETTING)
        lines.append(f"• model: {chosen} (set for this chat)" if chosen else f"• model: {main_label(models)}")
        last = await last_route(ctx, str(chat))
        lines.append(f"• agent: {last} answered the last request" if last else "• agent: no request here yet")
        strategy, origin = await ctx.routes.effective_strategy(chat)
        lines.append(f"• routing: {strategy} (from {origin})")
        waiting = max(0, await queued(str(chat)) - 1)  # this /status is in flight itself
        lines.append(f"• queue: {waiting} message{'s' if waiting != 1 else ''} waiting here")
        pending = []
        row = await ctx.runs.pending(str(chat))
        if row is not None:
            pending.append(f"a {row.kind.replace('_', ' ')} asked {_ago((utcnow() - row.created_at).total_seconds())}")
        scheduled = await ctx.scheduled.pending(str(chat))
        if scheduled:
            pending.append(f"{len(scheduled)} scheduled message{'s' if len(scheduled) != 1 else ''}")
        lines.append(f"• pending: {', '.join(pending) if pending else 'nothing'} (/pending shows it)")
        lines.append(f"• usage today: {await _today(budgets, call)}")
        return "\n".join(lines)

    async def model(call: CommandCall) -> str:
        chat, args = call.event.chat, call.argv
        current = (await ctx.store.chat_settings(chat.settings_key)).get(MODEL_SETTING)
        if not args:
            return _listing(ctx, models, current)
        if not call.event.sender.is_admin:
            return "Only admins switch the model; /model lists them."
        actor = call.event.sender.id
        if args[0].lower() in ("reset", "default"):
            await ctx.audit(actor, chat.settings_key, MODEL_SETTING, current, None)
            return f"This chat uses the configured model again: {main_label(models)}."
        spec = _pick(args[0], configured(ctx, models))
        problem = await _unusable(models, spec)
        if problem is not None:
            return f"{spec} cannot be used here: {problem}. Nothing was changed; /model lists the configured ones."
        await ctx.audit(actor, chat.settings_key, MODEL_SETTING, current, spec)
        return f"This chat now uses {spec} (agents whose files name their own model keep it). /model reset undoes it."

    async def stop(call: CommandCall) -> str:
        # A running request is stopped before this runs (the supervisor handles /stop at once, like /cancel).
        row = await ctx.runs.pending(str(call.event.chat))
        if row is None:
            return "Nothing is running here."
        if not AccessPolicy.may_answer(row.requester, call.event.sender):
            return AccessPolicy.ONLY_REQUESTER.format(what="stop")
        await ctx.interrupts.cancel(call.event.chat, call.event.sender)
        return "Stopped: the request waiting here is cancelled."

    ctx.commands.add("new", new, "start a new conversation (forget this chat's history)")
    ctx.commands.add("status", status, "model, agent, routing, queue, what is pending, usage today")
    ctx.commands.add("model", model, "the configured models; admins switch this chat's", usage="[NAME|reset]")
    ctx.commands.add("stop", stop, "stop the running request")


def main_label(models: ModelCatalog) -> str:
    """The main model as people read it: ``gemini/gemini-2.5-flash``, or what the offline stand-in is."""
    if models.injected:
        return models.main.name
    if models.provider == "offline":
        return "offline (the labelled stand-in: no model key is set)"
    return f"{models.provider}/{models.config.name}"


def configured(ctx: CommandContext, models: ModelCatalog) -> dict[str, str]:
    """Every model the configuration names, as ``provider/name``, with what it is for."""
    settings, provider = ctx.settings, models.provider
    found: dict[str, str] = {}

    def add(spec: str, role: str) -> None:
        if spec and spec != "extractive":
            head, name = parse_spec(spec, provider)
            found.setdefault(f"{head}/{name}", role)

    if provider != "offline":
        add(f"{provider}/{settings.model.name}", "main")
    for spec in settings.model.fallbacks:
        add(spec, "fallback")
    add(settings.routing.llm.model, "router")
    add(settings.model.repair, "guardrail repairs")
    add(settings.memory.summary.model, "summaries")
    for agent in ctx.routes.catalog.agents.values():
        if agent.model:
            add(agent.model, f"agent {agent.name}")
    return found


def _listing(ctx: CommandContext, models: ModelCatalog, current: str | None) -> str:
    lines = [f"Model here: {current + ' (set for this chat)' if current else main_label(models)}."]
    named = configured(ctx, models)
    if named:
        lines.append("Configured:")
        lines += [f"• {spec} - {role}" for spec, role in named.items()]
    else:
        lines.append("No other model is configured (model.name, model.fallbacks, an agent's model:).")
    lines.append("Admins switch this chat's: /model NAME (provider/name; /model reset goes back).")
    return "\n".join(lines)


def _pick(text: str, named: dict[str, str]) -> str:
    """``text`` as ``provider/name``: a configured model named in full or by its name alone."""
    if text in named:
        return text
    return next((spec for spec in named if spec.split("/", 1)[1] == text), text)


async def _unusable(models: ModelCatalog, spec: str) -> str | None:
    """Why ``spec`` cannot answer here (no key for its provider, an unknown provider), or None."""
    provider, _name = parse_spec(spec, models.provider)
    if "/" not in spec:
        return "name it as provider/name (gemini/…, openai/…)"
    if spec.split("/", 1)[0] != provider:
        return f"unknown provider {spec.split('/', 1)[0]!r}"
    try:
        model = models.build(spec)
    except ConfigError as exc:
        return str(exc)
    await model.aclose()
    return None


async def _today(budgets: Budgets | None, call: CommandCall) -> str:
    if budgets is None:
        return "not counted (budgets.enabled is false)"
    event = call.event
    payer = budgets.payer(event.chat, event.sender.id, event.sender.is_admin)
    day, _month = budgets.periods()
    user, chat = payer.scopes
    spent = await budgets.spent((user, chat), (day,))
    mine, here = spent[(user, day)], spent[(chat, day)]
    return (
        f"you {mine.tokens:,} tokens ({mine.calls} model call{'s' if mine.calls != 1 else ''}), "
        f"this chat {here.tokens:,} tokens (/usage for the month and the limits)"
    )


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    return f"{seconds / 3600:.1f} h ago"
