"""Where ``run_command`` runs: a bubblewrap sandbox that cannot see the bot.

A command the user approved may still try to read what it should not: the bot's
environment through ``/proc/<parent>/environ`` (tokens, API keys), its database,
its configuration, files anywhere else.  Under bubblewrap (``bwrap``, Debian's
``bubblewrap`` package) it gets fresh namespaces (PID, IPC, UTS, cgroup, user,
network unless ``network: true``), so the bot's processes do not exist for it;
a read-only view of the system directories only (``/usr``, ``/bin``, ``/lib*``,
``/etc``, the Python installation), with the bot's data and configuration
masked where they would show through (under a system directory, and inside the
workspace: an empty read-only folder or an empty file in their place); a private
``/tmp``; the workspace as its only writable directory; an unprivileged user; a clean environment (bwrap itself
is started with it, so even ``/proc/1/environ`` inside holds nothing of the
bot's); and it dies with the bot.  When the command exits, everything it left
running in the background dies with it (the namespace's init exits).

Chosen by ``tools.run_command.sandbox``: ``auto`` (bubblewrap when it works
here, else ``run_command`` stays off and the start-up log says why), ``bwrap``
(required) or ``none`` (no sandbox: the command can read the bot's files; only
when the operator says so).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
PATH = "/usr/local/bin:/usr/bin:/bin"
NOBODY = "65534"


class SandboxUnavailable(RuntimeError):
    """No sandbox can run here; the message says why and what to do."""


class Sandbox(Protocol):
    """Turns a command into the process that runs it."""

    name: str

    def argv(self, command: Sequence[str], workspace: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The program to start and its environment, for ``command`` in ``workspace``."""


class NoSandbox:
    """Runs the command as it is (``sandbox: none``): it can read whatever the bot's user can."""

    name = "none"

    def argv(self, command: Sequence[str], workspace: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        return list(command), env


@dataclass
class Bubblewrap:
    """Runs the command under ``bwrap`` (see the module docstring)."""

    executable: str
    network: bool = False
    hidden: Sequence[Path] = ()
    """The bot's own files (data dir, config, ``.env``): masked wherever a system directory or the workspace
    would show them.  Only those that exist are masked (a mount point would be made on the host)."""
    name: str = field(default="bwrap", init=False)

    def argv(self, command: Sequence[str], workspace: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        args = [self.executable, "--unshare-all", "--die-with-parent", "--new-session"]
        if self.network:
            args.append("--share-net")
        args += ["--uid", NOBODY, "--gid", NOBODY]
        mounted: list[Path] = []
        for root in (*SYSTEM_DIRS, *_python_roots()):
            if Path(root).exists() and not any(Path(root).is_relative_to(m) for m in mounted):
                args += ["--ro-bind", root, root]
                mounted.append(Path(root))
        args += _masks([p for p in self.hidden if any(p.is_relative_to(m) for m in mounted)])
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
        args += ["--bind", str(workspace), str(workspace)]
        # Later mounts win: what of the bot's lies inside the workspace is covered after the workspace is bound.
        args += _masks([p for p in self.hidden if p == workspace or p.is_relative_to(workspace)])
        args += ["--chdir", str(workspace), "--"]
        search = ":".join([PATH, *(f"{root}/bin" for root in _python_roots())])
        inner = {**env, "PATH": search, "HOME": str(workspace), "TMPDIR": "/tmp"}
        inner.pop("USER", None)
        inner.pop("LOGNAME", None)
        # bwrap is started with the command's own (clean) environment: /proc/1/environ inside is bwrap's.
        return [*args, *command], inner


def _masks(paths: Sequence[Path]) -> list[str]:
    """bwrap arguments covering each existing path: a folder by an empty read-only tmpfs, a file by /dev/null."""
    args: list[str] = []
    for path in paths:
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def _python_roots() -> list[str]:
    """Where this Python lives when it is not under /usr (pyenv, a venv): so commands can run ``python3``."""
    roots = []
    for prefix in {sys.base_prefix}:
        if prefix and not any(Path(prefix).is_relative_to(d) for d in SYSTEM_DIRS):
            roots.append(prefix)
    return roots


def bubblewrap(*, network: bool, hidden: Sequence[Path]) -> Bubblewrap:
    """A working bubblewrap sandbox, or :class:`SandboxUnavailable` saying why not."""
    executable = shutil.which("bwrap")
    if executable is None:
        raise SandboxUnavailable("bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)")
    sandbox = Bubblewrap(executable, network=network, hidden=tuple(hidden))
    probe, env = sandbox.argv(["true"], Path("/tmp"), {})
    try:
        done = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap does not start here: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        detail = reason[-1] if reason else f"exit code {done.returncode}"
        raise SandboxUnavailable(
            f"bubblewrap cannot create its namespaces here ({detail}); in a container, allow user namespaces"
        )
    return sandbox


def choose_sandbox(mode: str, *, network: bool, hidden: Sequence[Path]) -> Sandbox:
    """The sandbox ``tools.run_command.sandbox`` asks for; :class:`SandboxUnavailable` when there is none."""
    if mode == "none":
        return NoSandbox()
    return bubblewrap(network=network, hidden=hidden)
