"""Files people attach on the web console's Chat page: the page stored them on this machine (under a
``web-uploads`` folder of the data dir, one folder per person); the media intake reads them back from there.

Only the gateway's own page makes ``web`` messages, so a reference names a file it stored; still, nothing
outside a ``web-uploads/<person>/`` folder is read, and no link is followed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from bot.events import Attachment
from bot.media.fetch import FetchError
from channels.console_files import file_chunks
from channels.web.settings import WebChatSettings

UPLOADS = "web-uploads"
"""The folder (in the data dir) the page stores uploads in."""


def uploaded_path(ref: str | None) -> Path:
    """The stored upload a ``file://`` reference names (:class:`FetchError`: not one)."""
    parts = urlsplit(ref or "")
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise FetchError("a web chat file is a stored upload (file://…)")
    path = Path(url2pathname(parts.path))
    if not path.is_absolute() or path.parent.parent.name != UPLOADS or path.is_symlink() or not path.is_file():
        raise FetchError(f"there is no uploaded file {path.name}")
    return path


class UploadedFiles:
    """Streams an upload the page stored."""

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        async for chunk in file_chunks(uploaded_path(attachment.ref)):
            yield chunk

    async def close(self) -> None:
        return None


def build_fetcher(settings: WebChatSettings) -> UploadedFiles:
    """The web plugin's fetcher (:mod:`channels.registry`)."""
    return UploadedFiles()
