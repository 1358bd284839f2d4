"""The channels the gateway knows: a new channel is a package under ``channels/`` plus one line here.

Each entry names the key under ``channels`` in the configuration, the settings model (imported
here: settings modules are light) and the adapter factory (imported only when the channel is
enabled: platform libraries take seconds to import), and what ``bot init`` and ``bot doctor`` ask of it.
Registering adds the channel's section to the settings (:mod:`bot.config.channels` imports this module by
name), to ``bot init`` (its questions, options, keys and secrets), ``bot doctor`` and ``bot run``.
"""

from __future__ import annotations

from bot.config.channels import SectionEntry, register_section, unregister_section
from channels.base import ChannelPlugin
from channels.console import ConsoleSettings
from channels.discord.settings import DiscordSettings
from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings
from channels.web.settings import WebChatSettings

PLUGINS: dict[str, ChannelPlugin] = {}


def register(plugin: ChannelPlugin) -> None:
    PLUGINS[plugin.name] = plugin
    register_section(plugin.name, SectionEntry(plugin.settings, plugin.secret_variables, plugin.fetcher))


def unregister(name: str) -> None:
    """Forget channel ``name`` (a test's own channel, once the test is done)."""
    PLUGINS.pop(name, None)
    unregister_section(name)


register(
    ChannelPlugin(
        "console",
        ConsoleSettings,
        "channels.console:build",
        fetcher="channels.console_files:build_fetcher",
        setup="channels.console:SETUP",
    )
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
        setup="channels.telegram.setup:SETUP",
        library="aiogram",
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
        setup="channels.slack.setup:SETUP",
        library="slack-bolt",
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
        setup="channels.discord.setup:SETUP",
        library="discord.py",
    )
)
register(
    ChannelPlugin(
        "web",
        WebChatSettings,
        "channels.web.adapter:build",
        text_limit=16_000,
        fetcher="channels.web.files:build_fetcher",
        setup="channels.web.settings:SETUP",
    )
)
