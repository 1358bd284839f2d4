"""Runs one stdio MCP server and takes it down when the gateway dies.

Usage (the gateway does this; stdlib only, run with ``python -I -S``)::

    launcher.py GATEWAY_PID -- COMMAND [ARGS...]

The MCP client starts this script in a new session, so the launcher, the
server and anything the server starts share one process group.  The server
inherits stdin/stdout (the MCP pipes) directly.  A clean shutdown is the SDK's:
close stdin, then signal the group.  The launcher covers the unclean one: when
the gateway is killed (SIGKILL, OOM), Linux sends the launcher a signal
(``PR_SET_PDEATHSIG``; elsewhere the parent pid is polled) and it terminates
the whole group, so no server outlives its gateway even if it ignores EOF.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
GRACE_S = 2.0
"""Between SIGTERM and SIGKILL when the gateway is gone."""


class _GatewayGone(Exception):
    pass


class _Watch:
    """The parent-death signal: remembered until the launcher can act on it, then raised once.

    Linux may send it more than once while the gateway's threads exit one by one
    (the launcher is handed from one dying thread to the next).
    """

    gone = False
    armed = False

    @classmethod
    def on_signal(cls, signum: int, frame: object) -> None:
        armed, cls.armed = cls.armed, False
        cls.gone = True
        if armed:
            raise _GatewayGone


def _watch_parent() -> bool:
    """Ask the kernel for a signal when the parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _take_down_group(child: subprocess.Popen[bytes]) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE_S
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(0, signal.SIGKILL)  # the launcher too: nothing of the group may stay
    return 1


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: launcher.py GATEWAY_PID -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    gateway, command = int(argv[1]), argv[3:]
    signal.signal(signal.SIGUSR1, _Watch.on_signal)
    kernel_watch = _watch_parent()
    if os.getppid() != gateway:
        return 1  # the gateway died before the watch was set
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127

    def forward(signum: int, frame: object) -> None:
        child.send_signal(signum)

    try:
        _Watch.armed = True
        if _Watch.gone:
            raise _GatewayGone
        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        # The server holds the MCP pipes; the launcher's copies would only delay end-of-file.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
    except _GatewayGone:
        return _take_down_group(child)
    while True:
        try:
            code = child.wait(timeout=None if kernel_watch else 1.0)
        except subprocess.TimeoutExpired:
            if os.getppid() != gateway:
                return _take_down_group(child)
            continue
        except _GatewayGone:
            if not _gateway_alive(gateway):
                return _take_down_group(child)
            _Watch.gone, _Watch.armed = False, True  # only the gateway thread that started us ended
            if os.getppid() != gateway:
                return _take_down_group(child)
            continue
        return code if code >= 0 else 128 - code


def _gateway_alive(gateway: int) -> bool:
    """After the death signal: whether the gateway lives on (a thread of it ended, not the process).

    A dying process hands its children to init (or a subreaper) within moments.
    """
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        if os.getppid() != gateway:
            return False
        time.sleep(0.01)
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv))
