"""Routing commands: /agents for everyone; /strategy, /routing, /route, /reload for admins.

Changes are stored (they survive restarts) and audited: who, when, old, new.
A per-chat strategy lives under the chat's ``channel:chat_id``; global changes
under ``*``, and sit above the configuration files in the layer order.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bot.commands.context import CommandContext
from bot.commands.corrections import Corrections
from bot.commands.registry import CommandCall
from bot.config.settings import RoutingSection
from bot.routing import STRATEGIES
from bot.routing.policy import GLOBAL, ROUTING_KEYS
from bot.tracing.steps import confidence_shown


def _get(section: RoutingSection, dotted: str) -> Any:
    value: Any = section
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    head, _, rest = dotted.partition(".")
    return {head: _nest(rest, value) if rest else value}


_EMPTY = {"llm.model": "(none: the main model)"}


def _shown(key: str, value: Any) -> str:
    """A setting in people's words: on/off, "(none)", numbers as written (never Python's ``True`` or ``''``)."""
    if value is True or value is False:
        return "on" if value else "off"
    if value is None or value == "":
        return _EMPTY.get(key, "(none)")
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(key, v) for v in value) or "(none)"
    return str(value)


def _parse_value(raw: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


ROUTE_USAGE = (
    "Usage: /route TEXT (a dry run: nothing is answered) | /route AGENT (the last message here was for AGENT: "
    "it becomes an example of it) | /route corrections | /route forget ID"
)


def register_admin_commands(ctx: CommandContext) -> None:
    """Add the routing commands to ``ctx.commands``."""
    corrections = Corrections(ctx)

    async def agents(call: CommandCall) -> str:
        lines = ["Agents (address one with @name):"]
        for agent in ctx.routes.catalog.agents.values():
            about = f" - {agent.description}" if agent.description else ""
            lines.append(f"@{agent.name} ({agent.kind}){about}")
        return "\n".join(lines)

    async def strategy(call: CommandCall) -> str:
        chat = call.event.chat
        args = call.argv
        if not args:
            effective, origin = await ctx.routes.effective_strategy(chat)
            return f"Routing strategy here: {effective} (from {origin})."
        actor = call.event.sender.id
        if args[0] == "reset":
            scope = GLOBAL if "--global" in args else chat.settings_key
            old = (await ctx.store.chat_settings(scope)).get("strategy")
            await ctx.audit(actor, scope, "strategy", old, None)
            effective, origin = await ctx.routes.effective_strategy(chat)
            where = "global override removed" if scope == GLOBAL else "this chat's override removed"
            return f"{where.capitalize()}; now {effective} (from {origin})."
        value = args[0].lower()
        if value not in STRATEGIES:
            return "Usage: /strategy [rule|llm|hybrid] [--global] | /strategy reset [--global]"
        scope = GLOBAL if "--global" in args else chat.settings_key
        old = (await ctx.store.chat_settings(scope)).get("strategy")
        await ctx.audit(actor, scope, "strategy", old, value)
        if scope == GLOBAL:
            return f"Global routing strategy set to {value} (chats with their own override keep it)."
        return f"Routing strategy for this chat set to {value}."

    async def routing(call: CommandCall) -> str:
        args = call.argv
        if len(args) >= 3 and args[0] == "set":
            return await _routing_set(ctx, call, args[1], " ".join(args[2:]))
        if args and args[0] == "reset" and len(args) == 2:
            return await _routing_set(ctx, call, args[1], None)
        if args:
            return "Usage: /routing | /routing set KEY VALUE | /routing reset KEY"
        config, origins = await ctx.routes.effective_routing(), await ctx.routes.origins()
        effective, origin = await ctx.routes.effective_strategy(call.event.chat)
        lines = ["Routing (value - layer):"]
        for key in ROUTING_KEYS:
            if key == "strategy":
                lines.append(f"strategy = {effective} - {origin}")
            else:
                lines.append(f"{key} = {_shown(key, _get(config, key))} - {origins[key]}")
        last = await last_route(ctx, str(call.event.chat))
        if last:
            lines.append(f"Last message here: {last}")
        return "\n".join(lines)

    async def route(call: CommandCall) -> str:
        argv = call.argv
        if not call.args:
            return ROUTE_USAGE
        if len(argv) == 1 and argv[0].lower() in ("corrections", "examples"):
            return await corrections.listing()
        if len(argv) == 2 and argv[0].lower() == "forget":
            return await corrections.forget(call.event.sender.id, argv[1])
        if len(argv) == 1 and argv[0].lstrip("@").lower() in ctx.routes.catalog.agents:
            return await corrections.add(call.event.chat, call.event.sender.id, argv[0].lstrip("@").lower())
        decision = await ctx.routes.decide(call.event.chat, call.args)
        lines = [
            f"strategy: {decision.strategy}",
            f"method: {decision.method}",
            f"agent: {decision.agent or '(none)'}",
            f"confidence: {decision.confidence:.2f}",
            f"matched: {', '.join(decision.matched) or '-'}" + (" (strong priority)" if decision.strong else ""),
            f"keywords: {', '.join(decision.matched_keywords) or '-'}",
            f"patterns: {', '.join(decision.matched_patterns) or '-'}",
            f"latency: {decision.latency_us / 1000:.2f} ms",
        ]
        if decision.fallback:
            lines.append(f"fallback: {decision.fallback}")
        if decision.note:
            lines.append(f"note: {decision.note}")
        return "\n".join(lines)

    async def reload(call: CommandCall) -> str:
        errors = await ctx.routes.reload_agents()
        names = ", ".join(ctx.routes.catalog.agents)
        if not errors:
            return f"Reloaded {len(ctx.routes.catalog.agents)} agents: {names}."
        shown = "\n".join(f"- {e}" for e in errors[:20])
        return f"Reloaded {len(ctx.routes.catalog.agents)} agents: {names}.\n{len(errors)} file(s) skipped:\n{shown}"

    ctx.commands.add("agents", agents, "list the agents")
    ctx.commands.add(
        "strategy", strategy, "show or set the routing strategy", admin=True, usage="[rule|llm|hybrid|reset] [--global]"
    )
    ctx.commands.add("routing", routing, "routing settings and where they come from", admin=True)
    ctx.commands.add(
        "route",
        route,
        "dry-run routing for a text, or correct the last route",
        admin=True,
        usage="TEXT | AGENT | corrections | forget ID",
    )
    ctx.commands.add("reload", reload, "re-read agent files", admin=True)


async def last_route(ctx: CommandContext, chat_key: str) -> str:
    """How the chat's last request was routed, from its trace: ``debug-analyzer (rule, matched: bug)``."""
    if ctx.tracing is None or not ctx.tracing.config.enabled:
        return ""
    runs = await ctx.tracing.runs(chat_key, 1)
    route = next((e for e in runs[0] if e.type == "route"), None) if runs else None
    if route is None:
        return ""
    matched = [*(route.data.get("keywords") or []), *(route.data.get("patterns") or [])]
    how = f"matched: {', '.join(map(str, matched))}" if matched else confidence_shown(route.data.get("confidence"))
    return f"{route.agent} ({route.data.get('method')}, {how})"


async def _routing_set(ctx: CommandContext, call: CommandCall, key: str, raw: str | None) -> str:
    if key not in ROUTING_KEYS:
        return f"Unknown routing key {key!r}. Keys: {', '.join(ROUTING_KEYS)}"
    if key == "strategy":
        return "Use /strategy to change the strategy."
    current = await ctx.routes.effective_routing()
    value = None if raw is None else _parse_value(raw)
    if value is not None:
        merged = current.model_dump()
        cursor = merged
        parts = key.split(".")
        for part in parts[:-1]:
            cursor = cursor[part]
        cursor[parts[-1]] = value
        try:
            checked = RoutingSection.model_validate(merged)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            return f"Invalid value for {key}: {reason}. Nothing was changed."
        if key == "default_agent" and value not in ctx.routes.catalog.agents:
            return f"Unknown agent {value!r}. Nothing was changed."
        value = _get(checked, key)
    name = f"routing.{key}"
    old = (await ctx.store.chat_settings(GLOBAL)).get(name)
    await ctx.audit(call.event.sender.id, GLOBAL, name, old, value)
    if value is None:
        return f"{key} is back to its configured value."
    return f"{key} set to {_shown(key, value)} for every chat."
