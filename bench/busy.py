"""Helpers the benchmarks share: CPU hogs beside a run (a loaded machine) and CPU time read from ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def busy_loops(count: int) -> Iterator[list[int]]:
    """``count`` processes spinning ``while True: pass`` beside the block (each wants a whole core); their pids."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``; 0 elsewhere)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a server and its children, live or ended (PostgreSQL: the postmaster and its backends)."""
    fields = _stat(pid)
    if not fields:
        return 0.0
    total = sum(int(f) for f in fields[11:15])  # utime, stime, and those of ended children
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            child = _stat(int(entry.name))
            if child and child[1] == str(pid):
                total += sum(int(f) for f in child[11:15])
    return total / os.sysconf("SC_CLK_TCK")
