"""The agents the gateway can run: built-in subagents and file-defined agents.

Each agent spec becomes an :class:`AgentDef`: its runner (Chat, ReAct or
Plan-Execute-Replan), the tools it may see (allow/deny, deny wins), what needs
confirmation, its context mode and its model.  ``/reload`` rebuilds the
catalog from the files; errors are reported per file and the rest load.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from agents.chat import ChatRunner
from agents.guardrails import GuardrailRule
from agents.handoffs import HandoffTarget
from agents.react import CONFIRM_QUESTION, ReactRunner
from agents.results import Runner
from agents.spec import AgentSpec, load_agents
from agents.tools.base import Tool, matches, select_tools
from bot.config.settings import Settings
from bot.routing.rule import RouteTarget

log = logging.getLogger(__name__)

RunnerKind = Literal["chat", "react", "plan"]


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
    _selected: tuple[Sequence[Tool], list[Tool]] | None = field(default=None, repr=False, compare=False)

    @property
    def system_prompt(self) -> str:
        return str(getattr(self.runner, "system_prompt", "") or "")

    def handoff_to(self, name: str) -> HandoffTarget | None:
        return next((h for h in self.handoffs if h.to == name), None)

    def tools(self, available: Sequence[Tool]) -> list[Tool]:
        """The tools this agent may see: its MCP servers, then allow/deny (deny wins).

        Remembered for the last pool seen (the gateway hands out the same list object while
        no MCP tool changes), so the per-message path does not filter again.
        """
        last = self._selected
        if last is not None and last[0] is available:
            return last[1]
        pool = [t for t in available if not t.toolset.startswith("mcp.") or self._mcp_allowed(t.toolset)]
        selected = select_tools(pool, self.allow, self.deny)
        self._selected = (available, selected)
        return selected

    def _mcp_allowed(self, toolset: str) -> bool:
        server = toolset.removeprefix("mcp.")
        return self.mcp_servers is not None and server in self.mcp_servers

    def confirms(self, tool_name: str) -> bool:
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
        )


def builtin_agents_dir() -> Path:
    return Path(str(resources.files("bot") / "defaults" / "agents"))


RunnerFactory = Callable[[AgentSpec], Runner]


def _runner_for(spec: AgentSpec, plan_factory: RunnerFactory | None) -> Runner:
    prompt = spec.prompt
    if spec.runner == "chat":
        return ChatRunner(spec.name, prompt)
    if spec.runner == "plan" and plan_factory is not None:
        return plan_factory(spec)
    question = spec.confirmation.prompt_template if spec.confirmation else None
    return ReactRunner(spec.name, prompt, confirm_question=question or CONFIRM_QUESTION)


def agent_from_spec(spec: AgentSpec, plan_factory: RunnerFactory | None = None) -> AgentDef:
    confirmation = spec.confirmation
    return AgentDef(
        name=spec.name,
        kind=spec.runner,
        runner=_runner_for(spec, plan_factory),
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
            HandoffTarget(to=h.to, when=h.when, description=h.description, include_context=h.include_context)
            for h in spec.handoffs
        ],
        guardrails=[
            GuardrailRule(name=g.name, schema=g.output_schema, policy=g.policy, max_repairs=g.max_repairs)
            for g in spec.guardrails
        ],
    )


@dataclass
class AgentCatalog:
    """The loaded agents, by name, in a stable order."""

    agents: dict[str, AgentDef]
    errors: list[str]
    plan_factory: RunnerFactory | None = None

    @classmethod
    def load(
        cls,
        settings: Settings,
        *,
        known_tools: set[str] | None = None,
        plan_factory: RunnerFactory | None = None,
    ) -> AgentCatalog:
        registry = load_agents(
            builtin_agents_dir(),
            settings.agents.user_dir.expanduser(),
            [d.expanduser() for d in settings.agents.dirs],
        )
        errors = [str(e) for e in registry.errors]
        for error in errors:
            log.warning("agent file skipped: %s", error)
        agents = {spec.name: agent_from_spec(spec, plan_factory) for spec in registry.specs.values()}
        for agent in agents.values():
            # A handoff tool without its own description borrows the target's.
            agent.handoffs = [
                h if h.description or h.to not in agents else replace(h, description=agents[h.to].description)
                for h in agent.handoffs
            ]
        return cls(agents, errors, plan_factory)

    def get(self, name: str) -> AgentDef | None:
        return self.agents.get(name)

    def targets(self) -> list[RouteTarget]:
        return [a.target() for a in self.agents.values()]

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": a.name, "kind": a.kind, "title": a.title, "source": a.source} for a in self.agents.values()]
