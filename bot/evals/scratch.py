"""The run's temporary folder (``bot-eval-<pid>-…`` in the system's temp dir): each trial's store and workspace.

Removed when the run ends, however it ends (an error, a cancellation: ``bot eval`` turns SIGTERM and SIGINT into
one).  A run killed outright (SIGKILL, a power cut) cannot remove it, so every run first sweeps the folders of
runs whose process is gone: the folder's name carries the pid and an ``owner`` file in it the process's start
time and pid namespace, so a folder of a live run — in another container sharing the temp dir, or of a process
that got a reused pid — is left alone, as is a folder of another user or of an unknown shape.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "bot-eval-"
_NAME = re.compile(rf"^{PREFIX}(?P<pid>[0-9]+)-[A-Za-z0-9_]+$")
OWNER = "owner"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``); None: no such process, or no
    ``/proc`` to tell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22; the name before ")" may hold spaces


def _namespace() -> int | None:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return started is None or _started(pid) in (started, None)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the folders killed runs left in ``root`` (the temp dir); those removed."""
    root = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    uid, here = os.getuid(), _namespace()
    for path in entries:
        match = _NAME.match(path.name)
        if match is None:
            continue
        try:
            info = path.lstat()
            owner = json.loads((path / OWNER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # gone meanwhile, not ours to read, or not a folder a run of this version made
        if not path.is_dir() or path.is_symlink() or info.st_uid != uid or not isinstance(owner, dict):
            continue
        pid = int(match["pid"])
        if owner.get("pid") != pid or owner.get("pidns") != here or _alive(pid, owner.get("started")):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
            log.info("removed %s, left by an eval run that was killed (pid %d)", path, pid)
    return removed


@contextmanager
def scratch(root: Path | None = None) -> Iterator[Path]:
    """A fresh temporary folder for this run, removed on the way out; stale ones swept first."""
    sweep(root)
    pid = os.getpid()
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-", dir=root))
    try:
        owner = {"pid": pid, "started": _started(pid), "pidns": _namespace()}
        (path / OWNER).write_text(json.dumps(owner), encoding="utf-8")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
