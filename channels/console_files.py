"""Files the console's person attaches: read from this machine (``file://`` references to regular files).

Only the process itself makes console messages (the terminal, ``bot eval``'s turns with ``attach``), so the
files are the local user's own; no platform can send one here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from bot.events import Attachment
from bot.media.fetch import CHUNK, FetchError
from channels.console import ConsoleSettings


async def file_chunks(path: Path) -> AsyncIterator[bytes]:
    """``path``'s bytes in chunks, read on a thread (a local file's fetcher: the console's, the web chat's)."""
    handle = await asyncio.to_thread(path.open, "rb")
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK):
            yield chunk
    finally:
        handle.close()


class LocalFiles:
    """Streams a local file named by a ``file://`` reference."""

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        parts = urlsplit(attachment.ref or "")
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            raise FetchError("the console attaches only local files (file://…)")
        path = Path(url2pathname(parts.path))
        if not path.is_file():
            raise FetchError(f"there is no file {path.name}")
        async for chunk in file_chunks(path):
            yield chunk

    async def close(self) -> None:
        return None


def build_fetcher(settings: ConsoleSettings) -> LocalFiles:
    """The console plugin's fetcher (:mod:`channels.registry`)."""
    return LocalFiles()
