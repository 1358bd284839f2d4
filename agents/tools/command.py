"""``run_command``: off unless enabled, always confirmed, sandboxed, run in the workspace, bounded in time and output.

The command runs in a sandbox (:mod:`agents.tools.sandbox`) in its own process
group (killed whole on timeout), with stdin closed, a small environment (never
the gateway's tokens and keys), and no shell unless ``shell: true`` (otherwise it
is split with :func:`shlex.split`).  Whatever it printed is kept, even when a
background child holds its output open after it exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import signal
from collections.abc import Sequence
from pathlib import Path

from agents.tools.base import Tool, ToolError, tool
from agents.tools.config import CommandToolConfig
from agents.tools.sandbox import NoSandbox, SandboxUnavailable, choose_sandbox

log = logging.getLogger(__name__)

_SANDBOX_EXEC = re.compile(r"exit code 1\nbwrap: execvp (\S{1,200}): (No such file or directory|Permission denied)\n?$")

RUN_COMMAND = "run_command"
"""Its name (the tool exists only when enabled and sandboxed; agent files may name it anyway)."""
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")


def command_env(extra: list[str]) -> dict[str, str]:
    """The environment a command gets: a few harmless variables and the configured ones."""
    names = set(BASE_ENV) | set(extra)
    env = {k: v for k, v in os.environ.items() if k in names}
    env.setdefault("PATH", os.defpath)
    return env


async def _collect(stream: asyncio.StreamReader, kept: bytearray, limit: int) -> bool:
    """Read to the end into ``kept`` (at most ``limit`` bytes; the rest is drained so the process never blocks).

    Returns whether anything was dropped.  ``kept`` fills as the output comes, so what was
    read stays when the reading is stopped early.
    """
    dropped = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            dropped = True
    return dropped


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
    output = bytearray()
    reader = asyncio.ensure_future(_collect(proc.stdout, output, config.max_output_chars * 4))
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
        dropped = bool(reader.result()) if done and not reader.cancelled() and reader.exception() is None else False
    finally:
        if proc.returncode is None:  # cancelled: nothing of the command may outlive the run
            _kill_group(proc)
        for task in (reader, waiter):
            task.cancel()
        # Closed here, not left to the garbage collector after the loop is gone ("Event loop is closed").
        transport = getattr(proc, "_transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()
    text = _clip(bytes(output), dropped, config.max_output_chars)
    if timed_out:
        raise ToolError(f"timed out after {config.timeout_s:g} s; the command was killed. Output so far:\n{text}")
    code = proc.returncode
    status = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return f"{status}\n{text}"


def command_tools(config: CommandToolConfig, workspace: Path, *, hidden: Sequence[Path] = ()) -> list[Tool]:
    """``run_command`` when enabled and a sandbox is at hand, else nothing.

    ``hidden``: the bot's own files (data dir, configuration) the sandbox masks.
    Raises :class:`SandboxUnavailable` when ``sandbox: bwrap`` cannot work here.
    """
    if not config.enabled:
        return []
    root = workspace.expanduser().resolve()
    try:
        sandbox = choose_sandbox(config.sandbox, network=config.network, hidden=[p.resolve() for p in hidden])
    except SandboxUnavailable as exc:
        if config.sandbox == "bwrap":
            raise
        log.warning(
            "run_command is enabled but stays OFF: %s. Install bubblewrap, or set tools.run_command.sandbox: none "
            "to run commands without a sandbox (they can then read the bot's files and environment).",
            exc,
        )
        return []
    if isinstance(sandbox, NoSandbox):
        log.warning(
            "run_command runs commands WITHOUT a sandbox (tools.run_command.sandbox: none): an approved command "
            "can read the bot's database, configuration and files."
        )

    @tool(risk="high", needs_approval=True, name=RUN_COMMAND)
    async def run_command(command: str) -> str:
        """Run a command in the workspace folder and return its exit code and output (stdout and stderr)."""
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"the workspace cannot be created: {exc.strerror}") from None
        if not command.strip():
            raise ToolError("empty command")
        if config.shell:
            argv = ["/bin/sh", "-c", command]
        else:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise ToolError(f"cannot parse the command: {exc}") from None
        program, env = sandbox.argv(argv, root, command_env(config.pass_env))
        try:
            proc = await asyncio.create_subprocess_exec(
                *program,
                cwd=root,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        except FileNotFoundError:
            raise ToolError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise ToolError(f"permission denied: {argv[0]}") from None
        except OSError as exc:
            raise ToolError(f"cannot start the command: {exc.strerror or exc}") from None
        result = await _finish(proc, config)
        failed = _SANDBOX_EXEC.match(result)  # the sandbox could not start it: say so as plainly as without one
        if failed is not None:
            what = "command not found" if failed[2] == "No such file or directory" else failed[2].lower()
            raise ToolError(f"{what}: {failed[1]}")
        return result

    return [run_command]
