"""An MCP server as a toolset: its listed tools as :class:`Tool` objects named ``mcp.<server>.<tool>``.

Each :meth:`McpToolset.list_tools` call is one run's view of the server: if
the server fails during the run (exits, stops answering), the rest of that
run gets a clear tool error for its tools instead of calls that might reach a
restarted server halfway through.  The next run starts afresh.

Risk comes from the server's default and per-tool overrides; ``confirm`` from
its ``require_confirmation`` list.  A tool whose input schema is broken (or
cannot be expressed for the model) is left out with a warning rather than
breaking every request of the agents that use the server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from agents.models.gemini_schema import SchemaError, sanitize_schema
from agents.tools.base import Risk, Tool, ToolContext, ToolError, matches
from agents.tools.mcp.config import McpServerConfig
from agents.tools.mcp.connection import ListedTool, ServerConnection
from agents.tools.mcp.faults import Outage, ServerUnavailable

log = logging.getLogger(__name__)

PREFIX = "mcp."

FaultHook = Callable[[Outage, str], Awaitable[None]]
"""Told when a call hits an outage: the outage and the chat key of the call (to tell the user once)."""


def tool_name(server: str, tool: str) -> str:
    """The name used in allow/deny lists, confirmations and the ledger: ``mcp.<server>.<tool>``."""
    return f"{PREFIX}{server}.{tool}"


def split_tool_name(name: str) -> tuple[str, str] | None:
    """``("server", "tool")`` for an MCP tool name, else ``None``."""
    if not name.startswith(PREFIX):
        return None
    server, _, tool = name[len(PREFIX) :].partition(".")
    return (server, tool) if server and tool else None


@dataclass
class _RunFaults:
    """What failed during one run (a reason per server)."""

    failed: dict[str, str] = field(default_factory=dict)


class McpToolset:
    """The tools of one MCP server (toolset ``mcp.<server>``)."""

    def __init__(self, connection: ServerConnection, *, on_fault: FaultHook | None = None) -> None:
        self.connection = connection
        self.server = connection.name
        self.name = f"{PREFIX}{connection.name}"
        self.on_fault = on_fault
        self._checked: tuple[int, dict[str, dict[str, Any] | None]] = (-1, {})

    @property
    def config(self) -> McpServerConfig:
        return self.connection.config

    async def list_tools(self) -> Sequence[Tool]:
        """This run's tools of the server (connecting if needed); raises :class:`ServerUnavailable`."""
        listed = await self.connection.list_tools()
        schemas = self._schemas(listed)
        run = _RunFaults()
        return [self._tool(t, schema, run) for t in listed if (schema := schemas.get(t.name)) is not None]

    def risk(self, tool: str) -> Risk:
        full = tool_name(self.server, tool)
        overrides = self.config.tools
        if tool in overrides or full in overrides:
            return overrides.get(tool) or overrides[full]
        for pattern, risk in overrides.items():
            if matches(tool, [pattern]) or matches(full, [pattern]):
                return risk
        return self.config.risk

    def needs_approval(self, tool: str) -> bool:
        patterns = self.config.require_confirmation
        return matches(tool, patterns) or matches(tool_name(self.server, tool), patterns)

    def _schemas(self, listed: Sequence[ListedTool]) -> dict[str, dict[str, Any] | None]:
        version, checked = self._checked
        if version != self.connection.version:
            checked = {t.name: self._schema(t) for t in listed}
            self._checked = (self.connection.version, checked)
        return checked

    def _schema(self, listed: ListedTool) -> dict[str, Any] | None:
        schema = {**listed.parameters}
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
            sanitize_schema(schema)
        except (jsonschema.SchemaError, SchemaError) as exc:
            log.warning("MCP server %s: tool %r left out, unusable input schema: %s", self.server, listed.name, exc)
            return None
        return schema

    def _tool(self, listed: ListedTool, schema: dict[str, Any], run: _RunFaults) -> Tool:
        full = tool_name(self.server, listed.name)

        async def invoke(ctx: ToolContext, **args: Any) -> Any:
            return await self._invoke(listed.name, args, ctx, run)

        return Tool(
            name=full,
            description=listed.description or f"The {listed.name} tool of the MCP server {self.server}.",
            parameters=schema,
            func=invoke,
            risk=self.risk(listed.name),
            needs_approval=self.needs_approval(listed.name),
            toolset=self.name,
            wants_context=True,
        )

    async def _invoke(self, tool: str, args: dict[str, Any], ctx: ToolContext, run: _RunFaults) -> Any:
        from agents.tools.mcp.results import convert_result

        earlier = run.failed.get(self.server)
        if earlier is not None:
            raise ToolError(
                f"the MCP server {self.server!r} failed earlier in this run ({earlier}); "
                "its tools are unavailable until the next message"
            )
        try:
            result = await self.connection.call(tool, args)
        except ServerUnavailable as exc:
            run.failed[self.server] = exc.outage.reason
            await self._report(exc.outage, ctx.chat_key)
            raise ToolError(
                f"the MCP server {self.server!r} is unavailable ({exc.outage.reason}); its tools cannot be used "
                "in this run. Answer without them, or tell the user it is unavailable."
            ) from None
        return convert_result(result, tool_name(self.server, tool))

    async def _report(self, outage: Outage, chat_key: str) -> None:
        if self.on_fault is None:
            return
        try:
            await self.on_fault(outage, chat_key)
        except Exception:  # telling the user is best effort; the tool result already says it
            log.exception("MCP server %s: could not report the outage", self.server)
