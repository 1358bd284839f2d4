"""Discord files: downloads (attachment URLs on Discord's CDN, streamed) and uploads (``file=`` on a message)."""

from __future__ import annotations

from typing import Any

import discord

from bot.media.fetch import HttpFetcher
from channels.discord.settings import DiscordSettings


class DiscordFetcher(HttpFetcher):
    platform = "Discord"
    hosts = ("discordapp.com", "discordapp.net", "discord.com")

    def refused(self, status: int, content_type: str) -> str | None:
        problem = super().refused(status, content_type)
        return f"{problem} (an attachment link expires after a while)" if problem else None


def build_fetcher(settings: DiscordSettings) -> DiscordFetcher:
    return DiscordFetcher(settings.api_base)


def with_file(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``channel.send`` arguments with ``file_path=(path, name)`` opened as a :class:`discord.File`."""
    found = kwargs.get("file_path")
    if found is None:
        return kwargs
    path, name = found
    return {**{k: v for k, v in kwargs.items() if k != "file_path"}, "file": discord.File(path, filename=name)}
