"""The stderr of a stdio MCP server: kept in an unlinked temporary file, read on failure.

Servers log to stderr freely (often in colour); the gateway's own log should
get only the last lines, and only when the server failed.  The file is in
append mode, so trimming it while the server runs is safe.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from typing import TextIO

MAX_BYTES = 1_000_000
"""Past this size the file is emptied (the server keeps writing to it)."""


class StderrLog:
    """One server process's stderr."""

    def __init__(self) -> None:
        self.file: TextIO = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        fd = self.file.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)

    def tail(self, max_chars: int = 600) -> str:
        """The last lines written (ANSI colours removed), or ``""``."""
        if self.file.closed:
            return ""
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - max_chars * 2)
        raw = os.pread(fd, size - start, start).decode("utf-8", "replace")
        text = _strip_ansi(raw).strip()
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        return "\n".join(lines)[-max_chars:]

    def trim(self) -> None:
        if not self.file.closed and os.fstat(self.file.fileno()).st_size > MAX_BYTES:
            os.ftruncate(self.file.fileno(), 0)

    def close(self) -> None:
        self.file.close()


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
