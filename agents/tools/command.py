"""``run_command``: off unless enabled, always confirmed, confined to the workspace, bounded in time."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from pathlib import Path

from agents.tools.base import Tool, ToolError, tool
from agents.tools.config import CommandToolConfig


def command_tools(config: CommandToolConfig, workspace: Path) -> list[Tool]:
    if not config.enabled:
        return []

    @tool(risk="high", confirm=True)
    async def run_command(command: str) -> str:
        """Run a command in the workspace folder and return its exit code and output."""
        root = workspace.expanduser()
        root.mkdir(parents=True, exist_ok=True)
        if config.shell:
            proc = await asyncio.create_subprocess_shell(
                command,
                cwd=root,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        else:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise ToolError(f"cannot parse the command: {exc}") from None
            if not argv:
                raise ToolError("empty command")
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=root,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                )
            except FileNotFoundError:
                raise ToolError(f"command not found: {argv[0]}") from None
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), config.timeout_s)
        except TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
            raise ToolError(f"timed out after {config.timeout_s:g} s; the command was killed") from None
        text = output.decode("utf-8", errors="replace")
        if len(text) > config.max_output_chars:
            text = text[: config.max_output_chars] + f"\n[output truncated at {config.max_output_chars} characters]"
        return f"exit code {proc.returncode}\n{text}"

    return [run_command]
