"""Configuration of MCP servers (the gateway's ``mcp.servers.<name>`` section).

Kept free of the ``mcp`` SDK so loading settings stays fast: the SDK is
imported only when a server is first connected.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.tools.base import Risk

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
"""Server names appear in tool names (``mcp.<server>.<tool>``), so no dots."""
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """A server's configuration cannot be used (the message names the server and field)."""


class McpServerConfig(BaseModel):
    """One MCP server: stdio (``command``) or streamable HTTP (``url``)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    """The program that runs the server over stdio (looked up on ``PATH``)."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the server (``${VAR}`` is read from the gateway's environment). Only PATH, HOME
    and a few basics are inherited besides these: the gateway's own secrets are never passed wholesale."""
    cwd: Path | None = None
    url: str | None = None
    """The streamable-HTTP endpoint (``http(s)://host/mcp``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers, e.g. ``Authorization: Bearer ${TOKEN}``; never logged."""
    timeout_s: float = Field(30, gt=0)
    """Per tool call, and for connecting (start, handshake, listing the tools)."""
    enabled: bool = True
    risk: Risk = "medium"
    """The risk of every tool of this server unless ``tools`` says otherwise (``high`` means confirmed)."""
    tools: dict[str, Risk] = Field(default_factory=dict)
    """Per-tool risk overrides: tool name (or glob) → risk."""
    require_confirmation: list[str] = Field(default_factory=list)
    """Tools (names or globs, bare or as ``mcp.<server>.<tool>``; ``*`` for all) confirmed by the user each time."""
    protocol: Literal["auto", "legacy"] = "auto"
    """``auto`` negotiates the newest protocol; ``legacy`` forces the ``initialize`` handshake."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set either command (stdio) or url (streamable HTTP), not both or neither")
        if self.url and not re.match(r"https?://", self.url):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"

    def target(self) -> str:
        """What the server is, for status lines: the command line or the URL (without credentials)."""
        if self.command:
            return " ".join([self.command, *self.args])
        return re.sub(r"(://)[^/@]+@", r"\1", self.url or "")


class McpConfig(BaseModel):
    """The ``mcp`` section: servers by name."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not SERVER_NAME.fullmatch(name):
                hint = f"use letters, digits, '_' or '-' (tools are named mcp.{name}.<tool>)"
                raise ValueError(f"server name {name!r}: {hint}")
        return servers


def expand(values: Mapping[str, str], environ: Mapping[str, str], *, server: str, field: str) -> dict[str, str]:
    """``values`` with ``${VAR}`` / ``${VAR:-default}`` read from ``environ``.

    A variable that is unset and has no default is a configuration error naming
    the variable (never the values, which are secrets).
    """
    out: dict[str, str] = {}
    for key, value in values.items():

        def replace(match: re.Match[str], key: str = key) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise McpConfigError(f"mcp.servers.{server}.{field}.{key}: ${{{name}}} is not set in the environment")

        out[key] = _VAR.sub(replace, value)
    return out


def server_env(config: McpServerConfig, server: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    return expand(config.env, os.environ if environ is None else environ, server=server, field="env")


def server_headers(config: McpServerConfig, server: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    return expand(config.headers, os.environ if environ is None else environ, server=server, field="headers")
