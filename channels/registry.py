"""The channels the gateway knows: a new channel is a package under ``channels/`` plus one entry here.

Each entry names the key under ``channels`` in the configuration, the settings model (imported here: settings
modules are light) and typed references to the rest: small functions that import inside and return the adapter's
factory (imported only when the channel is enabled: platform libraries take seconds to import), the media
fetcher's, what ``bot doctor`` asks the platform and what ``bot init`` asks the person.  mypy checks each against
the settings model.  Importing this module installs the channels: it registers each one's section with the
settings (:func:`bot.config.channels.register_section`); the composition root imports it (``bot.cli.main``,
``bot.gateway.app``) before the settings load, and ``bot init``, ``bot doctor`` and ``bot run`` read
:data:`PLUGINS`.
"""

from __future__ import annotations

from typing import Any

from bot.config.channels import SectionEntry, register_section, unregister_section
from channels.base import ChannelFactory, ChannelPlugin, DoctorCheck, FetcherFactory
from channels.console import SETUP as CONSOLE_SETUP
from channels.console import ConsoleSettings
from channels.console import build as build_console
from channels.discord.settings import DiscordSettings
from channels.setup import ChannelSetup
from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings
from channels.web.settings import SETUP as WEB_SETUP
from channels.web.settings import WebChatSettings

PLUGINS: dict[str, ChannelPlugin[Any]] = {}


def register(plugin: ChannelPlugin[Any]) -> None:
    PLUGINS[plugin.name] = plugin
    register_section(plugin.name, SectionEntry(plugin.settings, plugin.secret_variables))


def unregister(name: str) -> None:
    """Forget channel ``name`` (a test's own channel, once the test is done)."""
    PLUGINS.pop(name, None)
    unregister_section(name)


# -- console: a terminal (its adapter is light: no platform library)


def _console_adapter() -> ChannelFactory[ConsoleSettings]:
    return build_console


def _console_fetcher() -> FetcherFactory[ConsoleSettings]:
    from channels.console_files import build_fetcher

    return build_fetcher


def _console_setup() -> ChannelSetup:
    return CONSOLE_SETUP


# -- telegram (aiogram)


def _telegram_adapter() -> ChannelFactory[TelegramSettings]:
    from channels.telegram.adapter import build

    return build


def _telegram_fetcher() -> FetcherFactory[TelegramSettings]:
    from channels.telegram.media import build_fetcher

    return build_fetcher


def _telegram_doctor() -> DoctorCheck[TelegramSettings]:
    from channels.telegram.doctor import check

    return check


def _telegram_setup() -> ChannelSetup:
    from channels.telegram.setup import SETUP

    return SETUP


# -- slack (slack-bolt)


def _slack_adapter() -> ChannelFactory[SlackSettings]:
    from channels.slack.adapter import build

    return build


def _slack_fetcher() -> FetcherFactory[SlackSettings]:
    from channels.slack.media import build_fetcher

    return build_fetcher


def _slack_doctor() -> DoctorCheck[SlackSettings]:
    from channels.slack.doctor import check

    return check


def _slack_setup() -> ChannelSetup:
    from channels.slack.setup import SETUP

    return SETUP


# -- discord (discord.py)


def _discord_adapter() -> ChannelFactory[DiscordSettings]:
    from channels.discord.adapter import build

    return build


def _discord_fetcher() -> FetcherFactory[DiscordSettings]:
    from channels.discord.media import build_fetcher

    return build_fetcher


def _discord_doctor() -> DoctorCheck[DiscordSettings]:
    from channels.discord.doctor import check

    return check


def _discord_setup() -> ChannelSetup:
    from channels.discord.setup import SETUP

    return SETUP


# -- web: the web console's chat page


def _web_adapter() -> ChannelFactory[WebChatSettings]:
    from channels.web.adapter import build

    return build


def _web_fetcher() -> FetcherFactory[WebChatSettings]:
    from channels.web.files import build_fetcher

    return build_fetcher


def _web_setup() -> ChannelSetup:
    return WEB_SETUP


register(ChannelPlugin("console", ConsoleSettings, _console_adapter, fetcher=_console_fetcher, setup=_console_setup))
register(
    ChannelPlugin(
        "telegram",
        TelegramSettings,
        _telegram_adapter,
        ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"),
        text_limit=4096,
        fetcher=_telegram_fetcher,
        doctor=_telegram_doctor,
        setup=_telegram_setup,
        library="aiogram",
    )
)
register(
    ChannelPlugin(
        "slack",
        SlackSettings,
        _slack_adapter,
        ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"),
        text_limit=3000,
        fetcher=_slack_fetcher,
        doctor=_slack_doctor,
        setup=_slack_setup,
        library="slack-bolt",
    )
)
register(
    ChannelPlugin(
        "discord",
        DiscordSettings,
        _discord_adapter,
        ("DISCORD_BOT_TOKEN",),
        text_limit=2000,
        fetcher=_discord_fetcher,
        doctor=_discord_doctor,
        setup=_discord_setup,
        library="discord.py",
    )
)
register(ChannelPlugin("web", WebChatSettings, _web_adapter, text_limit=16_000, fetcher=_web_fetcher, setup=_web_setup))
