"""Downloading what people attach: the port each channel implements (its plugin names the factory)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias
from urllib.parse import urlsplit

from bot.events import Attachment

if TYPE_CHECKING:
    from bot.config.channels import ChannelSection

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


FetcherLoader: TypeAlias = "Callable[[], Callable[[ChannelSection], MediaFetcher] | None]"
"""A channel's fetcher factory, its module imported when called (a platform library: seconds, so on a thread);
it returns None when the channel has no files.  The composition root has them from the channel registry
(``ChannelPlugin.load_fetcher``)."""


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


class HttpFetcher:
    """Downloads attachment URLs (``Attachment.ref``) from a platform's own hosts, streamed."""

    platform = "the platform"
    hosts: tuple[str, ...] = ()

    def __init__(self, api_base: str | None, headers: dict[str, str] | None = None) -> None:
        self.api_base = api_base
        self.headers = headers or {}
        self._session: Any = None

    def refused(self, status: int, content_type: str) -> str | None:
        """Why a response is not the file (``None``: it is)."""
        return None if status == 200 else f"{self.platform} answered HTTP {status}"

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        import aiohttp

        url = attachment.ref or ""
        if not host_allowed(url, self.hosts, self.api_base):
            raise FetchError(f"the file is not on {self.platform}")  # headers (a token) go nowhere else
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300, sock_read=60))
        try:
            async with self._session.get(url, headers=self.headers) as response:
                problem = self.refused(response.status, response.content_type)
                if problem is not None:
                    raise FetchError(problem)
                async for chunk in response.content.iter_chunked(CHUNK):
                    yield chunk
        except aiohttp.ClientError as exc:
            raise FetchError(f"the download failed ({type(exc).__name__})") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
