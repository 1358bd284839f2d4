"""``bot init`` for Discord: the bot's token, and the channels it reads."""

from __future__ import annotations

from collections.abc import Mapping

from channels.setup import ChannelSetup, Secret


class DiscordSetup(ChannelSetup):
    id_hint = "Discord user ids"

    def lines(self, answers: Mapping[str, str]) -> list[str]:
        return [
            "token: ${DISCORD_BOT_TOKEN}",
            "allowed_channels: []   # channel ids the bot reads (empty: mentions and DMs everywhere)",
        ]

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        return [
            Secret(
                "DISCORD_BOT_TOKEN", "discord.com/developers → your app → Bot → Reset Token", "placeholder.bot.token"
            )
        ]


SETUP = DiscordSetup()
