"""File tools confined to a workspace folder: ``read_file``, ``write_file``, ``list_dir``.

Every path is taken relative to the workspace and resolved (symbolic links
followed) before use; the result must stay inside the workspace, so ``../``
traversal, absolute paths elsewhere and links pointing out are refused.
Writing never goes through a link: the folder is resolved and checked, and
the file itself is opened without following a link (``O_NOFOLLOW``).  A file
with several hard links is neither read nor written: a hard link shares its
content with a file that may lie outside the workspace (the bot's database, say),
and only the opened file (``fstat``) says so, without a race.  The bot's own
files (``hidden``: its data, configuration, ``.env``) are refused, and left out
of listings, even when they lie inside the workspace.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from agents.tools.base import Tool, ToolError, tool

MAX_LISTED = 500


class Workspace:
    """The folder the tools may touch; created on first use."""

    def __init__(self, root: Path, max_bytes: int, hidden: Sequence[Path] = ()) -> None:
        self.root = root.expanduser().resolve()
        self.max_bytes = max_bytes
        resolved = (p.expanduser().resolve() for p in hidden)
        self.hidden = tuple(p for p in resolved if p == self.root or p.is_relative_to(self.root))
        """The bot's own files inside the workspace (or the workspace itself): never read, written or listed."""

    def is_hidden(self, target: Path) -> bool:
        """``target`` (a resolved path) is one of the bot's own files or inside one of its folders."""
        return any(target == h or target.is_relative_to(h) for h in self.hidden)

    def ensure(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"the workspace cannot be created: {exc.strerror}") from None

    def _joined(self, path: str) -> Path:
        if "\x00" in path:
            raise ToolError("the path contains a NUL character")
        self.ensure()
        candidate = Path(path.strip() or ".").expanduser()
        return candidate if candidate.is_absolute() else self.root / candidate

    def _inside(self, target: Path, path: str) -> None:
        if target != self.root and not target.is_relative_to(self.root):
            raise ToolError(f"{path!r} is outside the workspace; use a path relative to the workspace folder")
        if self.is_hidden(target):
            raise ToolError(
                f"{path!r} is one of the bot's own files (its data, configuration or secrets); not for tools"
            )

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (which need not exist), refused if outside the workspace."""
        try:
            target = self._joined(path).resolve()
        except (OSError, RuntimeError) as exc:  # a link loop, for one
            raise ToolError(f"cannot resolve {path!r}: {exc}") from None
        self._inside(target, path)
        return target

    def resolve_for_write(self, path: str) -> Path:
        """Where to write ``path``: its folder resolved and checked, its name not a link."""
        joined = self._joined(path)
        if joined.name in ("", "..") or os.path.normpath(joined) == str(self.root):
            self.resolve(path)  # outside? say so first
            raise ToolError(f"{path!r} is not a file name")
        try:
            folder = joined.parent.resolve()
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"cannot resolve {path!r}: {exc}") from None
        self._inside(folder, path)
        target = folder / joined.name
        self._inside(target, path)  # one of the bot's own files?
        if target.is_symlink():
            raise ToolError(f"{path!r} is a symbolic link; writing through links is not allowed")
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder")
        return target

    def shown(self, target: Path) -> str:
        return str(target.relative_to(self.root)) if target != self.root else "."


SEVERAL_LINKS = "it has {n} hard links, so it may be the same file as one outside the workspace; it is not {verb}"


def open_regular(target: Path, verb: str = "read") -> BinaryIO:
    """``target`` opened for reading: a regular file with one link (checked on the opened file, no race), not a
    symbolic link, never blocking (a FIFO).  :class:`ToolError` otherwise; ``verb`` says what is refused."""
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    handle = os.fdopen(fd, "rb")
    try:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("not a regular file")
        if info.st_nlink > 1:
            raise ToolError(SEVERAL_LINKS.format(n=info.st_nlink, verb=verb))
    except BaseException:
        handle.close()
        raise
    return handle


def _read(target: Path, limit: int) -> tuple[bytes, int]:
    with open_regular(target) as handle:
        return handle.read(limit), os.fstat(handle.fileno()).st_size


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("not a regular file")
        if info.st_nlink > 1:  # a hard link may share its content with a file outside the workspace
            raise ToolError("the file has several hard links; writing it is not allowed")
        handle.truncate(0)
        handle.write(data)


def _listing(target: Path, ws: Workspace) -> str:
    entries = sorted((p for p in target.iterdir() if not ws.is_hidden(p)), key=lambda p: p.name)
    lines = []
    for entry in entries[:MAX_LISTED]:
        try:
            info = entry.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"{entry.name}@ (link)")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"{entry.name}/")
        else:
            lines.append(f"{entry.name} ({info.st_size} bytes)")
    if len(entries) > MAX_LISTED:
        lines.append(f"… and {len(entries) - MAX_LISTED} more")
    return "\n".join(lines) or "(empty)"


def file_tools(root: Path, max_bytes: int, *, hidden: Sequence[Path] = ()) -> list[Tool]:
    """``read_file``, ``write_file`` and ``list_dir`` in ``root``; ``hidden``: the bot's own files, refused."""
    ws = Workspace(root, max_bytes, hidden)

    @tool(risk="low")
    async def read_file(path: str) -> str:
        """Read a text file from the workspace (path relative to the workspace folder)."""
        target = ws.resolve(path)
        if not target.exists():
            raise ToolError(f"no file {path!r} in the workspace")
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder; use list_dir")
        try:
            data, size = await asyncio.to_thread(_read, target, ws.max_bytes)
        except ToolError as exc:
            raise ToolError(f"cannot read {path!r}: {exc}") from None
        except OSError as exc:
            raise ToolError(f"cannot read {path!r}: {exc.strerror}") from None
        if b"\x00" in data[:8192]:
            raise ToolError(f"{path!r} is a binary file ({size} bytes); only text files can be read")
        text = data.decode("utf-8", errors="replace")
        if size > len(data):
            text += f"\n[truncated: the file is {size} bytes; only the first {len(data)} are shown]"
        return text

    @tool(risk="medium")
    async def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace (creating folders; replacing an existing file)."""
        target = ws.resolve_for_write(path)
        data = content.encode("utf-8")
        if len(data) > ws.max_bytes:
            raise ToolError(f"the content is {len(data)} bytes; the limit is {ws.max_bytes}")
        try:
            await asyncio.to_thread(_write, target, data)
        except ToolError as exc:
            raise ToolError(f"cannot write {path!r}: {exc}") from None
        except OSError as exc:
            if exc.errno == getattr(os, "ELOOP", -1):
                raise ToolError(f"{path!r} is a symbolic link; writing through links is not allowed") from None
            raise ToolError(f"cannot write {path!r}: {exc.strerror}") from None
        return f"wrote {len(data)} bytes to {ws.shown(target)}"

    @tool(risk="safe")
    async def list_dir(path: str = ".") -> str:
        """List a folder of the workspace (folders end with '/', links with '@')."""
        target = ws.resolve(path)
        if not target.is_dir():
            raise ToolError(f"no folder {path!r} in the workspace")
        try:
            return await asyncio.to_thread(_listing, target, ws)
        except OSError as exc:
            raise ToolError(f"cannot list {path!r}: {exc.strerror}") from None

    return [read_file, write_file, list_dir]
