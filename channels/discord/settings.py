"""``channels.discord``: the Discord channel's settings."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from channels.base import ChannelSection
from channels.shapes import discord_token_problem


class DiscordSettings(ChannelSection):
    # Discord ids are numbers; YAML reads unquoted ones as ints.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    token: str = ""
    allowed_channels: list[str] = Field(default_factory=list)
    """Guild channel ids the bot listens in (a thread counts as its parent channel); empty: all. DMs always pass."""
    gateway_url: str | None = None
    """The gateway websocket (tests, proxies); unset: derived from ``api_base`` (``ws(s)://…/gateway``) or Discord's."""

    def problems(self) -> list[str]:
        if not self.token:
            return ["channels.discord.token is empty: set DISCORD_BOT_TOKEN in the environment"]
        shape = discord_token_problem(self.token)
        fix = "the token from the Developer Portal (your app → Bot → Reset Token)"
        return [f"channels.discord.token {shape}: set DISCORD_BOT_TOKEN to {fix}"] if shape else []
