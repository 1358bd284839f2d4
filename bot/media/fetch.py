"""Downloading what people attach: the port each channel implements (its plugin names the factory)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol
from urllib.parse import urlsplit

from bot.events import Attachment

CHUNK = 64 * 1024


class FetchError(Exception):
    """The platform would not give the file (gone, forbidden, a network error); the message says which."""


class MediaFetcher(Protocol):
    """Streams an attachment's bytes from its platform (``Attachment.ref`` is the platform's file id or URL).

    Built from the channel's settings alone, so a worker process without the channel's connection can
    download too.  The caller stops reading when a size cap is reached; nothing is held whole in memory.
    """

    def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]: ...

    async def close(self) -> None: ...


def host_allowed(url: str, hosts: tuple[str, ...], api_base: str | None) -> bool:
    """Whether ``url`` is https on one of the platform's ``hosts`` (or on the configured ``api_base`` host,
    a local test or proxy server): a forged event must not make us fetch, let alone send a token to, any
    other address."""
    parts = urlsplit(url)
    if api_base:
        base = urlsplit(api_base)
        if (parts.scheme, parts.netloc) == (base.scheme, base.netloc):
            return True
    host = (parts.hostname or "").lower()
    return parts.scheme == "https" and any(host == h or host.endswith("." + h) for h in hosts)
