"""The runner registry: how an agent spec's ``runner`` becomes a runner, and what the run manager may
expect of it.  A new runner kind is one :func:`register` call (and its name in the spec format)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.chat import ChatRunner
from agents.graph import GraphRunner
from agents.plan_execute import PlanExecuteRunner
from agents.react import CONFIRM_QUESTION, ReactRunner
from agents.results import Runner
from agents.spec import AgentSpec
from agents.specs.model import RUNNER_NAMES
from bot.config.settings import PlanSection


@dataclass(frozen=True)
class RunnerKind:
    name: str
    build: Callable[[AgentSpec, PlanSection], Runner]
    """The runner for an agent file (``plan``: the ``plan`` section, the one setting a built-in runner reads)."""
    uses_tools: bool = True
    """Offered tools (a chat agent has none, so no MCP server is woken for it)."""
    hands_off: bool = False
    """Offered its handoffs as tools (plans run their own steps)."""
    replays_on_recovery: bool = False
    """A run cut off by a crash may start again from its message (it has no side effects to repeat)."""


RUNNERS: dict[str, RunnerKind] = {}


def register(kind: RunnerKind) -> None:
    """A runner agent files may name (``runner: <name>``)."""
    RUNNERS[kind.name] = kind
    RUNNER_NAMES[kind.name] = None


def _react(spec: AgentSpec, plan: PlanSection) -> ReactRunner:
    question = spec.confirmation.prompt_template if spec.confirmation else None
    return ReactRunner(spec.name, spec.prompt, confirm_question=question or CONFIRM_QUESTION)


def _plan(spec: AgentSpec, plan: PlanSection) -> PlanExecuteRunner:
    """Plan-Execute-Replan, configured by the ``plan`` section; its steps run on a ReAct executor."""
    return PlanExecuteRunner(
        spec.name,
        spec.prompt,
        approval=plan.approval_rule(),
        max_steps=plan.max_steps,
        progress=plan.progress,
        executor=_react(spec, plan),
    )


def _chat(spec: AgentSpec, plan: PlanSection) -> ChatRunner:
    return ChatRunner(spec.name, spec.prompt)


def _graph(spec: AgentSpec, plan: PlanSection) -> GraphRunner:
    assert spec.graph is not None  # the spec checks runner: graph has one
    return GraphRunner(spec.name, spec.graph)


register(RunnerKind("chat", _chat, uses_tools=False, replays_on_recovery=True))
register(RunnerKind("react", _react, hands_off=True))
register(RunnerKind("plan", _plan))
register(RunnerKind("graph", _graph, uses_tools=False))
