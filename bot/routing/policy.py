"""The routing in force for a chat: configuration with the admins' stored changes on top.

Layers, lowest first: the configuration files and environment (``routing.*``), global admin changes
(stored under ``*``), then a chat's own strategy (stored under the chat's ``channel:chat_id``).
The supervisor asks it for a decision; the admin commands read and change it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.config.settings import RoutingSection
from bot.events import ChatKey
from bot.routing import Correction, RouteDecision, Router, parse_target
from bot.runs.catalog import AgentCatalog
from bot.store.base import SettingsReader

GLOBAL = "*"
"""The settings scope of global admin changes."""
CORRECTIONS = "routing:corrections"
"""The settings scope of the corrections admins made (``/route AGENT``): one setting per correction, its id the
name, ``{agent, text, actor, at}`` the value. Settings are shared by every process (a change is announced) and
their changes audited, which is what corrections need."""
ROUTING_KEYS = (
    "enabled",
    "strategy",
    "rule.confidence_threshold",
    "rule.meaning",
    "rule.strong_priority",
    "rule.classifier_sure",
    "llm.model",
    "llm.timeout_ms",
    "fallback",
    "default_agent",
    "notify",
)
"""The ``routing.*`` keys admins may see and change in chat."""


def _routing_keys(glob: Mapping[str, Any]) -> dict[str, Any]:
    """The global admin changes under ``routing.``, without the prefix."""
    return {k.removeprefix("routing."): v for k, v in glob.items() if k.startswith("routing.")}


_SCALAR = (str, int, float, bool, type(None))


class RoutePolicy:
    """``routing``: the configured section; ``route_chars``: how much of a message is routed on
    (``limits.route_chars``); ``origin``: the layer a configured key comes from (:meth:`Settings.origin`);
    ``load_agents``: reads the agent files again (``/reload``)."""

    def __init__(
        self,
        routing: RoutingSection,
        store: SettingsReader,
        catalog: AgentCatalog,
        router: Router,
        *,
        route_chars: int,
        origin: Callable[[str], str],
        load_agents: Callable[[], AgentCatalog],
    ) -> None:
        self.routing = routing
        self.route_chars = route_chars
        self.origin = origin
        self.load_agents = load_agents
        self.store = store
        self.catalog = catalog
        self.router = router
        self._last: tuple[RoutingSection, tuple[tuple[str, type, Any], ...], RoutingSection] | None = None
        """The configured section, the global routing changes, and the section with them on top."""
        self._corrections: tuple[tuple[str, Any], ...] = ()
        """The ids and agents of the corrections the router has (compared with the stored ones on every message)."""

    async def corrections(self) -> list[Correction]:
        """The stored corrections, oldest first."""
        view = await self.store.settings_view(CORRECTIONS)
        found = [Correction.from_setting(key, value) for key, value in view.items() if isinstance(value, Mapping)]
        return sorted(found, key=lambda c: (c.at, c.id))

    async def sync_corrections(self) -> None:
        """Give the router the stored corrections when they changed (here or in another process)."""
        view = await self.store.settings_view(CORRECTIONS)
        if not view and not self._corrections:  # most bots: no correction, nothing to compare
            return
        seen = tuple((key, value.get("agent") if isinstance(value, Mapping) else None) for key, value in view.items())
        if seen == self._corrections:
            return
        self._corrections = seen
        self.router.set_corrections(await self.corrections())

    async def _overrides(self) -> dict[str, Any]:
        return _routing_keys(await self.store.settings_view(GLOBAL))

    async def effective_routing(self) -> RoutingSection:
        """``routing.*`` with the admins' global changes on top (the configured section when there are none)."""
        return self._routing(await self.store.settings_view(GLOBAL))

    def _routing(self, glob: Mapping[str, Any]) -> RoutingSection:
        """The routing section with the changes among the global settings ``glob`` on top."""
        overrides = _routing_keys(glob) if glob else None  # no global setting at all: nothing to look through
        base = self.routing
        if not overrides:
            return base
        # The section for the last overrides seen is kept (they are global: every message has the same ones
        # until an admin changes one), instead of a dump and a validation a message (see bench/README.md).
        changes = tuple((key, type(value), value) for key, value in overrides.items())
        last = self._last
        if last is not None and last[0] is base and last[1] == changes:
            return last[2]
        data: dict[str, Any] = base.model_dump()
        for key, value in overrides.items():
            cursor = data
            parts = key.split(".")
            for part in parts[:-1]:
                cursor = cursor[part]
            cursor[parts[-1]] = value
        section = RoutingSection.model_validate(data)
        if all(isinstance(value, _SCALAR) for value in overrides.values()):  # nothing that could change in place
            self._last = (base, changes, section)
        return section

    async def origins(self) -> dict[str, str]:
        """The layer each of :data:`ROUTING_KEYS` comes from (for ``/routing``)."""
        overrides = await self._overrides()
        return {key: "admin (global)" if key in overrides else self.origin(f"routing.{key}") for key in ROUTING_KEYS}

    async def effective_strategy(self, chat: ChatKey) -> tuple[str, str]:
        """The strategy for ``chat`` and the layer it comes from."""
        strategy, layer = await self._strategy(chat)
        return strategy, layer or self.origin("routing.strategy")

    async def _strategy(self, chat: ChatKey, glob: Mapping[str, Any] | None = None) -> tuple[str, str | None]:
        """The strategy for ``chat`` and the admin layer that set it (None: the configuration's, whose origin
        is only looked up when shown: every message asks for the strategy); ``glob``: the global view, if read."""
        own = (await self.store.settings_view(chat.settings_key)).get("strategy")
        if own:
            return own, "this chat (admin)"
        if glob is None:
            glob = await self.store.settings_view(GLOBAL)
        admins = glob.get("strategy")
        if admins:
            return admins, "admin (global)"
        return self.routing.strategy, None

    async def decide(self, chat: ChatKey, text: str, config: RoutingSection | None = None) -> RouteDecision:
        """Which agent answers ``text`` here (``@name`` and ``@auto --strategy=`` first); no side effects."""
        glob = None
        if config is None:
            glob = await self.store.settings_view(GLOBAL)  # read once per message: the routing and the strategy
            config = self._routing(glob)
        targeting = parse_target(text, self.catalog.agents)
        if targeting.agent is not None:
            return RouteDecision(targeting.agent, "explicit", "explicit", 1.0, text=targeting.text)
        await self.sync_corrections()
        strategy = targeting.strategy
        if not strategy:  # ``_strategy`` without its coroutine and its layer (see bench/README.md)
            strategy = (await self.store.settings_view(chat.settings_key)).get("strategy")
            if not strategy:
                if glob is None:
                    glob = await self.store.settings_view(GLOBAL)
                strategy = glob.get("strategy") or self.routing.strategy
        # A long message is routed on its prefix (bounded cost); the agent still gets all of it.
        decision = await self.router.decide(targeting.text[: self.route_chars], config, strategy)
        decision.text = targeting.text
        if targeting.error:
            decision.note = targeting.error
        return self.router.apply_fallback(decision, config)

    async def reload_agents(self) -> list[str]:
        """Re-read the agent files; the problems found (those files are skipped)."""
        catalog = self.load_agents()
        self.catalog.agents, self.catalog.errors = catalog.agents, catalog.errors
        self.router.set_targets(self.catalog.targets())
        self._corrections = ()  # the new agents get the stored corrections at the next message
        return catalog.errors
