"""``run_command``: off unless enabled, always confirmed, run in the workspace, bounded in time and output.

The command runs in its own process group (killed whole on timeout), with
stdin closed, a small environment (never the gateway's tokens and keys), and
no shell unless ``shell: true`` (otherwise it is split with :func:`shlex.split`).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from pathlib import Path

from agents.tools.base import Tool, ToolError, tool
from agents.tools.config import CommandToolConfig

BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")


def command_env(extra: list[str]) -> dict[str, str]:
    """The environment a command gets: a few harmless variables and the configured ones."""
    names = set(BASE_ENV) | set(extra)
    env = {k: v for k, v in os.environ.items() if k in names}
    env.setdefault("PATH", os.defpath)
    return env


async def _collect(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Read to the end, keeping the first ``limit`` bytes (the rest is drained so the process never blocks)."""
    kept = bytearray()
    dropped = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            dropped = True
    return bytes(kept), dropped


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _clip(data: bytes, dropped: bool, max_chars: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if dropped or len(text) > max_chars:
        text = text[:max_chars] + f"\n[output truncated at {max_chars} characters]"
    return text


async def _finish(proc: asyncio.subprocess.Process, config: CommandToolConfig) -> str:
    """Wait for the command within its time limit; kill its whole process group if it overruns."""
    assert proc.stdout is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.timeout_s
    reader = asyncio.ensure_future(_collect(proc.stdout, config.max_output_chars * 4))
    # Process.wait() also waits for the output pipe to close, which a background child can hold open.
    waiter = asyncio.ensure_future(proc.wait())
    timed_out = False
    try:
        while not waiter.done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                timed_out = True
                break
            if proc.returncode is not None:  # exited; give what it left behind a moment, then stop
                await asyncio.wait({waiter}, timeout=min(remaining, 1.0))
                break
            await asyncio.wait({waiter}, timeout=min(remaining, 0.1))
        if not waiter.done():
            _kill_group(proc)
            await asyncio.wait({waiter}, timeout=2.0)
        if not waiter.done():  # something left the group and still holds the pipe: stop listening
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        done, _ = await asyncio.wait({reader}, timeout=1.0)
        output, dropped = reader.result() if done else (b"", False)
    finally:
        if proc.returncode is None:  # cancelled: nothing of the command may outlive the run
            _kill_group(proc)
        for task in (reader, waiter):
            task.cancel()
    text = _clip(output, dropped, config.max_output_chars)
    if timed_out:
        raise ToolError(f"timed out after {config.timeout_s:g} s; the command was killed. Output so far:\n{text}")
    code = proc.returncode
    status = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return f"{status}\n{text}"


def command_tools(config: CommandToolConfig, workspace: Path) -> list[Tool]:
    """``run_command`` when enabled, else nothing."""
    if not config.enabled:
        return []
    root = workspace.expanduser().resolve()

    @tool(risk="high", confirm=True)
    async def run_command(command: str) -> str:
        """Run a command in the workspace folder and return its exit code and output (stdout and stderr)."""
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"the workspace cannot be created: {exc.strerror}") from None
        common: dict = {
            "cwd": root,
            "stdin": asyncio.subprocess.DEVNULL,
            "stdout": asyncio.subprocess.PIPE,
            "stderr": asyncio.subprocess.STDOUT,
            "start_new_session": True,
            "env": command_env(config.pass_env),
        }
        if not command.strip():
            raise ToolError("empty command")
        try:
            if config.shell:
                proc = await asyncio.create_subprocess_shell(command, **common)
            else:
                try:
                    argv = shlex.split(command)
                except ValueError as exc:
                    raise ToolError(f"cannot parse the command: {exc}") from None
                proc = await asyncio.create_subprocess_exec(*argv, **common)
        except FileNotFoundError:
            raise ToolError(f"command not found: {command.split()[0]}") from None
        except PermissionError:
            raise ToolError(f"permission denied: {command.split()[0]}") from None
        except OSError as exc:
            raise ToolError(f"cannot start the command: {exc.strerror or exc}") from None

        return await _finish(proc, config)

    return [run_command]
