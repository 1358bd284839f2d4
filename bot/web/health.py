"""The console's Health and Agents pages: what the gateway's parts say about themselves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents.tools.base import Tool
from bot.ops.budgets import Budgets
from bot.ops.metrics import Metrics, Sample
from bot.runs.catalog import AgentCatalog
from bot.store.ports import JobRepo
from bot.web.data import until
from bot.web.graph import graph_svg


class HealthView:
    def __init__(
        self,
        *,
        status: Callable[[], dict[str, Any]],
        sample: Callable[[], Awaitable[Sample]],
        metrics: Metrics,
        catalog: Callable[[], AgentCatalog],
        tools: Sequence[Tool],
        budgets: Budgets | None = None,
        jobs: JobRepo[Any] | None = None,
    ) -> None:
        self.status = status
        self.sample = sample
        self.metrics = metrics
        self.catalog = catalog
        self.tools = tools
        self.budgets = budgets
        self.job_store = jobs

    def model_calls(self) -> list[dict[str, Any]]:
        """Model calls since start by provider, model and outcome (errors show as their own rows)."""
        out = []
        for family in self.metrics.model_calls.collect():
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.value:
                    out.append({**sample.labels, "count": int(sample.value)})
        return sorted(out, key=lambda m: (m["outcome"] == "ok", m["provider"], m["model"]))

    async def budgets_text(self) -> str:
        if self.budgets is None:
            return ""
        today, month = await self.budgets.top(monthly=False), await self.budgets.top(monthly=True)
        return f"{today}\n\n{month}"

    async def jobs(self) -> list[dict[str, Any]] | None:
        if self.job_store is None:
            return None
        return [
            {
                "name": j.name,
                "chat_key": j.chat_key,
                "owner": j.owner,
                "status": j.status,
                "next": until(j.next_fire_at) if j.status == "active" else "-",
                "fires": j.fires,
            }
            for j in await self.job_store.live(200)
        ]

    def agents(self) -> list[dict[str, Any]]:
        out = []
        for agent in self.catalog().agents.values():
            spec = agent.spec
            triggers = spec.triggers if spec is not None else None
            graph = spec.graph if spec is not None else None
            out.append(
                {
                    "name": agent.name,
                    "kind": agent.kind,
                    "description": agent.description,
                    "source": agent.source,
                    "model": agent.model,
                    "mcp": ", ".join(agent.mcp_servers or []),
                    "confirm": ", ".join(agent.require_confirmation),
                    "tools": [t.name for t in agent.tools(self.tools)] if agent.runs_as.uses_tools else [],
                    "allow": ", ".join(agent.allow) if agent.allow is not None else "",
                    "deny": ", ".join(agent.deny),
                    "keywords": list(triggers.keywords) if triggers else [],
                    "patterns": list(triggers.patterns) if triggers else [],
                    "priority": triggers.priority if triggers else 50,
                    "handoffs": [h.to for h in agent.handoffs],
                    "svg": graph_svg(graph) if graph is not None else "",
                    "mermaid": graph.mermaid() if graph is not None else "",
                }
            )
        return out
