"""The sections of the agents' runs: ``agents`` (where file agents are read), ``interrupts`` (how long a pause
waits), ``plan`` (the Plan-Execute-Replan runner) and ``handoffs``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentsSection(_Section):
    dirs: list[Path] = Field(default_factory=lambda: [Path("config/agents")])
    user_dir: Path = Path("~/.config/bot/agents")


class InterruptsSection(_Section):
    """How long a pause waits for a human before it expires (seconds, per kind)."""

    tool_confirm_timeout_s: float = Field(3600, gt=0)
    plan_approval_timeout_s: float = Field(86400, gt=0)
    ask_user_timeout_s: float = Field(86400, gt=0)

    def timeout_for(self, kind: str) -> float:
        return float(getattr(self, f"{kind}_timeout_s", self.tool_confirm_timeout_s))


class StepsOver(_Section):
    if_steps_over: int = Field(ge=0)


class PlanSection(_Section):
    """The Plan-Execute-Replan runner."""

    approval: Literal["always", "never"] | StepsOver = "always"
    max_steps: int = Field(10, ge=1, le=50)
    progress: bool = True
    """Send a line per completed step."""

    def approval_rule(self) -> Literal["always", "never"] | int:
        return self.approval if isinstance(self.approval, str) else self.approval.if_steps_over


class HandoffsSection(_Section):
    """Agent-to-agent handoffs (``transfer_to_<agent>`` tools)."""

    max_depth: int = Field(5, ge=1, le=20)
    """Handoffs allowed in one run."""
    notify: str = "🔀 {from} → {to}: {reason}"
    """The line shown to the user at a handoff ({from}, {to}, {reason}); empty: say nothing."""
    context_messages: int = Field(10, ge=0, le=100)
    """How many recent messages a handoff with ``include_context`` passes on."""
