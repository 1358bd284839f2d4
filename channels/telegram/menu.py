"""The command menu Telegram shows under "/": the gateway's commands for everyone, kept in sync at start."""

from __future__ import annotations

import logging

from aiogram.exceptions import TelegramAPIError
from aiogram.methods import GetMyCommands, SetMyCommands
from aiogram.types import BotCommand

from channels.telegram.delivery import Api, TelegramDeliveryError

log = logging.getLogger(__name__)

COMMANDS = (
    ("start", "Introduction"),
    ("help", "The list of commands"),
    ("new", "Start a new conversation"),
    ("status", "Model, agent, queue and usage here"),
    ("model", "The models (admins switch this chat's)"),
    ("stop", "Stop the running request"),
    ("whoami", "Your id, role and chat"),
    ("reset", "Forget this chat's history"),
    ("cancel", "Cancel the pending or running request"),
    ("pending", "What is waiting for an answer here"),
    ("permissions", "Tools always allowed here"),
    ("agents", "The agents you can address"),
    ("trace", "How the last request was handled"),
)
"""The gateway's commands for everyone (admin commands stay out of the menu)."""


async def sync_commands(api: Api) -> None:
    """Set the menu unless it is already ours (a failure is logged: the bot works without it)."""
    wanted = [BotCommand(command=c, description=d) for c, d in COMMANDS]
    try:
        current = await api.call(GetMyCommands())
        if [(c.command, c.description) for c in current] != list(COMMANDS):
            await api.call(SetMyCommands(commands=wanted))
            log.info("telegram: command menu updated")
    except (TelegramAPIError, TelegramDeliveryError) as exc:
        log.warning("telegram: could not set the command menu: %s", api.redact(str(exc)))
