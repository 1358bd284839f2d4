"""The channels the gateway knows: a new channel is a package under ``channels/`` plus one line here.

Each entry names the key under ``channels`` in the configuration, the settings model (imported
here: settings modules are light) and the adapter factory (imported only when the channel is
enabled: platform libraries take seconds to import).
"""

from __future__ import annotations

from channels.base import ChannelPlugin
from channels.console import ConsoleSettings
from channels.discord.settings import DiscordSettings
from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings

PLUGINS: dict[str, ChannelPlugin] = {}


def register(plugin: ChannelPlugin) -> None:
    PLUGINS[plugin.name] = plugin


register(
    ChannelPlugin("console", ConsoleSettings, "channels.console:build", fetcher="channels.console_files:build_fetcher")
)
register(
    ChannelPlugin(
        "telegram",
        TelegramSettings,
        "channels.telegram.adapter:build",
        ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"),
        text_limit=4096,
        fetcher="channels.telegram.media:build_fetcher",
        doctor="channels.telegram.doctor:check",
    )
)
register(
    ChannelPlugin(
        "slack",
        SlackSettings,
        "channels.slack.adapter:build",
        ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"),
        text_limit=3000,
        fetcher="channels.slack.media:build_fetcher",
        doctor="channels.slack.doctor:check",
    )
)
register(
    ChannelPlugin(
        "discord",
        DiscordSettings,
        "channels.discord.adapter:build",
        ("DISCORD_BOT_TOKEN",),
        text_limit=2000,
        fetcher="channels.discord.media:build_fetcher",
        doctor="channels.discord.doctor:check",
    )
)
