"""Tools that wait for a person's yes: a toolset wrapped with the rule that says which calls need approval.

Like pydantic-ai's ``approval_required``: the rule is a wrapper around the tools an agent is offered, not
a closure of the run manager.  A call needs approval when any of these says so (the conventions): the tool's
own flag (an MCP server's confirmation list sets it too), risk ``high``, or the agent's
``confirmation.require_confirmation`` (names or patterns).  A chat's "always allow" grant skips it, except
for the tools in ``never_granted`` (``run_command``): those are asked about every time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from agents.messages import ToolCall
from agents.tools.base import RISK_ORDER, Tool

ApprovalRule = Callable[[Tool, ToolCall], bool]
"""Whether one call of a tool waits for a person's yes."""

NEVER_GRANTED = frozenset({"run_command"})
"""Tools asked about every time, whatever the chat granted."""


def by_risk(tool: Tool, call: ToolCall) -> bool:
    """The tool's own flag or risk ``high``: the rule every agent has."""
    return tool.confirm or RISK_ORDER[tool.risk] >= RISK_ORDER["high"]


def _never(name: str) -> bool:
    return False


def approval_rule(
    confirms: Callable[[str], bool] = _never,
    granted: Collection[str] = (),
    never_granted: Collection[str] = NEVER_GRANTED,
) -> ApprovalRule:
    """The rule of an agent (``confirms``: its own confirmation list) in a chat that ``granted`` some tools."""

    def needs_approval(tool: Tool, call: ToolCall) -> bool:
        if tool.name in never_granted:
            return True
        if tool.name in granted:
            return False
        return by_risk(tool, call) or confirms(tool.name)

    return needs_approval


def grantable(names: Iterable[str], never_granted: Collection[str] = NEVER_GRANTED) -> list[str]:
    """The tools of ``names`` a chat may always allow, sorted."""
    return sorted(set(names) - set(never_granted))


@dataclass(frozen=True)
class ApprovalRequiredToolset:
    """``tools`` whose calls wait for a person's yes where ``rule`` says so (the runner pauses before them)."""

    tools: tuple[Tool, ...]
    rule: ApprovalRule = by_risk

    def needs_approval(self, tool: Tool, call: ToolCall) -> bool:
        return self.rule(tool, call)


def approval_required(tools: Sequence[Tool], rule: ApprovalRule = by_risk) -> ApprovalRequiredToolset:
    """Wrap ``tools`` so that the calls ``rule`` names wait for a person's approval."""
    return ApprovalRequiredToolset(tuple(tools), rule)
