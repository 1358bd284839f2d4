"""Configuration of the built-in tools (the gateway's ``tools:`` section)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpToolConfig(_Section):
    timeout_s: float = Field(10, gt=0)
    max_bytes: int = Field(1_000_000, ge=1)
    max_redirects: int = Field(5, ge=0, le=20)
    allow_private: list[str] = Field(default_factory=list)
    """Hosts or networks (CIDR) that may be private/loopback, e.g. an intranet wiki."""
    user_agent: str = "supervisor-bot/0.1 (+http_get tool)"


class CommandToolConfig(_Section):
    enabled: bool = False
    timeout_s: float = Field(30, gt=0)
    max_output_chars: int = Field(20_000, ge=100)
    shell: bool = False


class ToolsConfig(_Section):
    workspace: Path = Path("data/workspace")
    max_file_bytes: int = Field(1_000_000, ge=1)
    http: HttpToolConfig = Field(default_factory=HttpToolConfig)
    run_command: CommandToolConfig = Field(default_factory=CommandToolConfig)
    disabled: list[str] = Field(default_factory=list)
    """Built-in tools turned off by name."""
