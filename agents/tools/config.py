"""Configuration of the built-in tools (the gateway's ``tools:`` section)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpToolConfig(_Section):
    """``http_get``: limits, and the private hosts or networks it may reach anyway."""

    timeout_s: float = Field(10, gt=0)
    """Total time for the whole fetch: every redirect hop and reading the body."""
    max_bytes: int = Field(1_000_000, ge=1)
    """Stop reading the body past this many bytes (the result says it was truncated)."""
    max_redirects: int = Field(5, ge=0, le=20)
    allow_private: list[str] = Field(default_factory=list)
    """Hosts (``wiki.intranet``) or networks/addresses (``10.1.0.0/16``, ``127.0.0.1``) that may be
    private or local, e.g. an intranet wiki. Everything else must be a public address."""
    user_agent: str = "supervisor-bot/0.1 (+http_get tool)"

    @field_validator("allow_private")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        out = []
        for entry in value:
            entry = entry.strip()
            if not entry:
                raise ValueError("empty entry in allow_private")
            if "/" in entry:
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ValueError(f"not a network (CIDR) in allow_private: {entry!r}") from None
            out.append(entry)
        return out


class CommandToolConfig(_Section):
    """``run_command``: off unless enabled; always confirmed by the user; sandboxed."""

    enabled: bool = False
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """``auto``: bubblewrap when it works here, else the tool stays off (the start-up log says why);
    ``bwrap``: bubblewrap or refuse to start; ``none``: no sandbox (the command can read the bot's files)."""
    network: bool = False
    """Let sandboxed commands use the network (off: they get no network at all)."""
    timeout_s: float = Field(30, gt=0)
    max_output_chars: int = Field(20_000, ge=100)
    shell: bool = False
    """Run through ``/bin/sh -c`` (pipes, globs); otherwise the command is split like a shell would, then run."""
    pass_env: list[str] = Field(default_factory=list)
    """Environment variables passed to commands besides PATH, HOME, locale and the like.
    The gateway's own environment (tokens, API keys) is never passed wholesale."""


class ToolsConfig(_Section):
    workspace: Path = Path("data/workspace")
    """The folder the file tools and ``run_command`` work in (created on first use); the gateway's
    settings put it under their data dir unless it is set."""
    max_file_bytes: int = Field(1_000_000, ge=1)
    """Largest file ``write_file`` writes; ``read_file`` shows at most this much."""
    http: HttpToolConfig = Field(default_factory=HttpToolConfig)
    run_command: CommandToolConfig = Field(default_factory=CommandToolConfig)
    disabled: list[str] = Field(default_factory=list)
    """Built-in tools turned off by name."""
