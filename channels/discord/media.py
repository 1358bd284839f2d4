"""Discord files: downloads (attachment URLs on Discord's CDN, streamed) and uploads (``file=`` on a message)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord

from bot.events import Attachment
from bot.media.fetch import CHUNK, FetchError, host_allowed
from channels.discord.settings import DiscordSettings

DISCORD_HOSTS = ("discordapp.com", "discordapp.net", "discord.com")


class DiscordFetcher:
    def __init__(self, settings: DiscordSettings) -> None:
        self.api_base = settings.api_base
        self._session: aiohttp.ClientSession | None = None

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        url = attachment.ref or ""
        if not host_allowed(url, DISCORD_HOSTS, self.api_base):
            raise FetchError("the file is not on Discord")
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300, sock_read=60))
        try:
            async with self._session.get(url) as response:
                if response.status != 200:
                    raise FetchError(f"Discord answered HTTP {response.status} (an attachment link expires)")
                async for chunk in response.content.iter_chunked(CHUNK):
                    yield chunk
        except aiohttp.ClientError as exc:
            raise FetchError(f"the download failed ({type(exc).__name__})") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def build_fetcher(settings: DiscordSettings) -> DiscordFetcher:
    return DiscordFetcher(settings)


def with_file(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``channel.send`` arguments with ``file_path=(path, name)`` opened as a :class:`discord.File`."""
    found = kwargs.get("file_path")
    if found is None:
        return kwargs
    path, name = found
    return {**{k: v for k, v in kwargs.items() if k != "file_path"}, "file": discord.File(path, filename=name)}
