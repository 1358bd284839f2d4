"""File tools confined to a workspace directory.

Every path is resolved (symlinks followed) and must stay inside the
workspace: ``../`` traversal, absolute paths elsewhere and symlinks pointing
out are refused.  Writing through a symlink is refused outright.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agents.tools.base import Tool, ToolError, tool


class Workspace:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root.expanduser().resolve()
        self.max_bytes = max_bytes

    def resolve(self, path: str, *, for_write: bool = False) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                candidate = candidate.relative_to(self.root)
            except ValueError:
                raise ToolError(f"{path!r} is outside the workspace") from None
        joined = self.root / candidate
        if for_write and joined.is_symlink():
            raise ToolError(f"{path!r} is a symbolic link; writing through links is not allowed")
        target = (joined.parent.resolve() / joined.name) if for_write else joined.resolve()
        if target != self.root and not target.is_relative_to(self.root):
            raise ToolError(f"{path!r} is outside the workspace")
        return target

    def shown(self, target: Path) -> str:
        return str(target.relative_to(self.root)) if target != self.root else "."


def file_tools(root: Path, max_bytes: int) -> list[Tool]:
    ws = Workspace(root, max_bytes)

    @tool(risk="low")
    async def read_file(path: str) -> str:
        """Read a text file from the workspace."""
        target = ws.resolve(path)
        if not target.is_file():
            raise ToolError(f"no file {path!r} in the workspace")
        size = target.stat().st_size
        if size > ws.max_bytes:
            raise ToolError(f"{path!r} is {size} bytes; the limit is {ws.max_bytes}")
        data = await asyncio.to_thread(target.read_bytes)
        return data.decode("utf-8", errors="replace")

    @tool(risk="medium")
    async def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace (creating folders; replacing an existing file)."""
        target = ws.resolve(path, for_write=True)
        encoded = content.encode("utf-8")
        if len(encoded) > ws.max_bytes:
            raise ToolError(f"content is {len(encoded)} bytes; the limit is {ws.max_bytes}")
        target.parent.mkdir(parents=True, exist_ok=True)
        # Open without following a link created in the meantime.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as exc:
            raise ToolError(f"cannot write {path!r}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(encoded)
        return f"wrote {len(encoded)} bytes to {ws.shown(target)}"

    @tool(risk="safe")
    async def list_dir(path: str = ".") -> str:
        """List a folder of the workspace."""
        target = ws.resolve(path)
        if not target.is_dir():
            raise ToolError(f"no folder {path!r} in the workspace")
        entries = sorted(target.iterdir(), key=lambda p: p.name)[:500]
        lines = [f"{p.name}/" if p.is_dir() else f"{p.name} ({p.stat().st_size} bytes)" for p in entries]
        return "\n".join(lines) or "(empty)"

    return [read_file, write_file, list_dir]
