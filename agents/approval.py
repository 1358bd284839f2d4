"""Tools that wait for a person's yes: a toolset wrapped with the rule that says which calls need approval.

Like pydantic-ai's ``approval_required``: the rule is a wrapper around the tools an agent is offered, not
a closure of the run manager.  A call needs approval when any of these says so (the conventions): the tool's
own flag (an MCP server's confirmation list sets it too), risk ``high``, or the agent's
``confirmation.require_confirmation`` (names or patterns).  A chat's "always allow" grant skips it, except
for the tools in ``never_granted`` (``run_command``): those are asked about every time.

The toolset enforces the rule where a tool is called, as pydantic-ai's wrapper does: calling a tool that
needs approval without one raises :class:`ApprovalRequired` before anything runs or is recorded, and the
runner turns it into a ``tool_confirm`` pause.  A runner passes ``approved=True`` only for a call a person
approved (on resume), so any runner that calls tools through the toolset pauses where it must.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from agents.messages import ToolCall, ToolResult
from agents.tools.base import RISK_ORDER, Tool
from agents.tools.calls import CallSite, run_call

ApprovalRule = Callable[[Tool, ToolCall], bool]
"""Whether one call of a tool waits for a person's yes."""

NEVER_GRANTED = frozenset({"run_command"})
"""Tools asked about every time, whatever the chat granted."""


def by_risk(tool: Tool, call: ToolCall) -> bool:
    """The tool's own flag or risk ``high``: the rule every agent has."""
    return tool.needs_approval or RISK_ORDER[tool.risk] >= RISK_ORDER["high"]


def _never(name: str) -> bool:
    return False


def approval_rule(
    listed: Callable[[str], bool] = _never,
    granted: Collection[str] = (),
    never_granted: Collection[str] = NEVER_GRANTED,
) -> ApprovalRule:
    """The rule of an agent (``listed``: whether its own confirmation list names a tool) in a chat that
    ``granted`` some tools."""

    def needs_approval(tool: Tool, call: ToolCall) -> bool:
        if tool.name in never_granted:
            return True
        if tool.name in granted:
            return False
        return by_risk(tool, call) or listed(tool.name)

    return needs_approval


def grantable(names: Iterable[str], never_granted: Collection[str] = NEVER_GRANTED) -> list[str]:
    """The tools of ``names`` a chat may always allow, sorted."""
    return sorted(set(names) - set(never_granted))


class ApprovalRequired(Exception):
    """A tool that needs approval was called without one: nothing ran; the runner pauses before ``call``."""

    def __init__(self, call: ToolCall, tool: Tool) -> None:
        super().__init__(f"{call.name} needs approval before it runs")
        self.call = call
        self.tool = tool


@dataclass(frozen=True)
class ApprovalRequiredToolset:
    """``tools`` whose calls wait for a person's yes where ``rule`` says so: :meth:`call_tool` enforces it."""

    tools: tuple[Tool, ...]
    rule: ApprovalRule = by_risk

    def needs_approval(self, tool: Tool, call: ToolCall) -> bool:
        return self.rule(tool, call)

    @cached_property
    def by_name(self) -> dict[str, Tool]:
        return {t.name: t for t in self.tools}

    async def call_tool(self, site: CallSite, call: ToolCall, *, agent: str, approved: bool = False) -> ToolResult:
        """Run ``call`` through the run's ledger; :class:`ApprovalRequired` instead when its tool needs approval
        and ``approved`` (a person's yes to this very call) is not given."""
        tool = self.by_name.get(call.name)
        if tool is not None and not approved and self.rule(tool, call):
            raise ApprovalRequired(call, tool)
        return await run_call(site, call, tool, agent)


NO_TOOLS = ApprovalRequiredToolset(())
"""The toolset of a run offered no tools."""


def approval_required(tools: Sequence[Tool], rule: ApprovalRule = by_risk) -> ApprovalRequiredToolset:
    """Wrap ``tools`` so that the calls ``rule`` names wait for a person's approval."""
    return ApprovalRequiredToolset(tuple(tools), rule)
