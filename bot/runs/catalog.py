"""The agents the gateway can run: built-in subagents and file-defined agents.

Each agent spec becomes an :class:`AgentDef`: its runner (Chat, ReAct or
Plan-Execute-Replan), the tools it may see (allow/deny, deny wins), what needs
confirmation, its context mode and its model.  ``/reload`` rebuilds the
catalog from the files; errors are reported per file and the rest load.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from agents.conditions import as_condition
from agents.guardrails import GuardrailRule
from agents.handoffs import HandoffTarget
from agents.models.base import Generation
from agents.results import Runner
from agents.spec import AgentSpec, check_references, load_agents
from agents.tools.base import Tool, matches, select_tools
from bot.config.settings import AgentsSection, PlanSection
from bot.runs.runners import RUNNERS, RunnerKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteTarget:
    """An agent as the routers see it."""

    name: str
    title: str = ""
    description: str = ""
    keywords: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    priority: int = 50
    examples: tuple[str, ...] = ()
    """Sample requests from the agent's file (``examples:``); corrections admins make are added by the router."""


@dataclass
class AgentDef:
    """An agent as the supervisor runs it."""

    name: str
    kind: str
    runner: Runner
    title: str = ""
    description: str = ""
    allow: list[str] | None = None
    deny: list[str] = field(default_factory=list)
    mcp_servers: list[str] | None = None
    require_confirmation: list[str] = field(default_factory=list)
    confirm_timeout_s: float | None = None
    context_mode: str = "shared"
    model: str | None = None
    spec: AgentSpec | None = None
    source: str = "builtin"
    handoffs: list[HandoffTarget] = field(default_factory=list)
    guardrails: list[GuardrailRule] = field(default_factory=list)
    media: frozenset[str] = frozenset({"image", "audio", "document"})
    """The kinds of file it takes (``media`` in its file)."""
    generation: Generation | None = None
    session_keys: tuple[str, ...] = ()
    """Session memory keys (``memory.session`` in its file)."""
    long_term_memory: bool = True
    """Given what is remembered about the person, with the memory tools (``memory.long_term``)."""

    def takes(self, kinds: set[str]) -> bool:
        return kinds <= self.media

    @property
    def runs_as(self) -> RunnerKind:
        """What its runner kind promises (:mod:`bot.runs.runners`)."""
        return RUNNERS[self.kind]

    @property
    def system_prompt(self) -> str:
        return str(getattr(self.runner, "system_prompt", "") or "")

    def handoff_to(self, name: str) -> HandoffTarget | None:
        return next((h for h in self.handoffs if h.to == name), None)

    def tools(self, available: Sequence[Tool]) -> list[Tool]:
        """The tools this agent may see: its MCP servers, then allow/deny (deny wins)."""
        pool = [t for t in available if not t.toolset.startswith("mcp.") or self._mcp_allowed(t.toolset)]
        return select_tools(pool, self.allow, self.deny)

    def _mcp_allowed(self, toolset: str) -> bool:
        server = toolset.removeprefix("mcp.")
        return self.mcp_servers is not None and server in self.mcp_servers

    def needs_approval(self, tool_name: str) -> bool:
        return matches(tool_name, self.require_confirmation)

    def target(self) -> RouteTarget:
        triggers = self.spec.triggers if self.spec is not None else None
        return RouteTarget(
            name=self.name,
            title=self.title,
            description=self.description,
            keywords=tuple(triggers.keywords) if triggers else (),
            patterns=tuple(triggers.patterns) if triggers else (),
            priority=triggers.priority if triggers else 50,
            examples=tuple(self.spec.examples) if self.spec is not None else (),
        )


def builtin_agents_dir() -> Path:
    return Path(str(resources.files("bot") / "defaults" / "agents"))


def agent_from_spec(spec: AgentSpec, plan: PlanSection) -> AgentDef:
    confirmation = spec.confirmation
    return AgentDef(
        name=spec.name,
        kind=spec.runner,
        runner=RUNNERS[spec.runner].build(spec, plan),
        title=spec.title or spec.name,
        description=spec.description or "",
        allow=list(spec.tools.allow) or None,
        deny=list(spec.tools.deny),
        mcp_servers=list(spec.mcp.servers) if spec.mcp is not None else None,
        require_confirmation=list(confirmation.require_confirmation) if confirmation else [],
        confirm_timeout_s=float(confirmation.timeout) if confirmation and confirmation.timeout else None,
        context_mode=spec.context_mode,
        model=spec.model,
        spec=spec,
        source=str(getattr(spec, "source", "") or "builtin"),
        handoffs=[
            HandoffTarget(
                to=h.to,
                when=h.when,
                description=h.description,
                include_context=h.include_context,
                condition=as_condition(h.when),
                payload_schema=h.payload.schema_ if h.payload is not None else None,
            )
            for h in spec.handoffs
        ],
        guardrails=[
            GuardrailRule(name=g.name, schema=g.output_schema, policy=g.policy, max_repairs=g.max_repairs)
            for g in spec.guardrails
        ],
        media=frozenset(spec.media),
        generation=spec.generation,
        session_keys=tuple(spec.memory.session),
        long_term_memory=spec.memory.long_term,
    )


@dataclass
class AgentCatalog:
    """The loaded agents, by name, in a stable order."""

    agents: dict[str, AgentDef]
    errors: list[str]

    @classmethod
    def load(
        cls,
        dirs: AgentsSection,
        plan: PlanSection,
        *,
        known_tools: set[str] | None = None,
        quiet: bool = False,
    ) -> AgentCatalog:
        """The agents of the directories ``dirs`` (the ``agents`` section), their runners configured by ``plan``;
        ``quiet``: the problems are only returned (a command that
        prints them itself), not logged as well."""
        warn = (lambda *args: None) if quiet else log.warning
        registry = load_agents(
            builtin_agents_dir(),
            dirs.user_dir.expanduser(),
            [d.expanduser() for d in dirs.dirs],
        )
        errors = [str(e) for e in registry.errors]
        for error in errors:
            warn("agent file skipped: %s", error)
        agents = {}
        for spec in registry.specs.values():
            if spec.runner not in RUNNERS:
                errors.append(f"{spec.name}: runner {spec.runner!r} is not one of {', '.join(RUNNERS)}")
                warn("agent file skipped: %s", errors[-1])
                continue
            agents[spec.name] = agent_from_spec(spec, plan)
        for spec in registry.specs.values():
            # A graph whose node runs an agent that is not here cannot run: refused, with the reason.
            missing = [e for e in check_references(spec, agents) if e.field.startswith("graph.")]
            if missing and spec.name in agents:
                del agents[spec.name]
                errors.extend(str(e) for e in missing)
                warn("agent file skipped: %s", "; ".join(str(e) for e in missing))
        for agent in agents.values():
            # A handoff tool without its own description borrows the target's.
            agent.handoffs = [
                h if h.description or h.to not in agents else replace(h, description=agents[h.to].description)
                for h in agent.handoffs
            ]
        return cls(agents, errors)

    def get(self, name: str) -> AgentDef | None:
        return self.agents.get(name)

    def targets(self) -> list[RouteTarget]:
        return [a.target() for a in self.agents.values()]

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": a.name, "kind": a.kind, "title": a.title, "source": a.source} for a in self.agents.values()]
