"""``channels.telegram``: the Telegram channel's settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from channels.base import ChannelSection
from channels.shapes import telegram_token_problem


class TelegramWebhook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    """The public HTTPS URL Telegram posts to (registered with setWebhook at start); empty: managed elsewhere."""
    path: str = "/telegram/webhook"
    """The route on the shared ``http`` server."""
    secret_token: str = ""
    """Checked against ``X-Telegram-Bot-Api-Secret-Token`` on every webhook request (required in webhook mode)."""


class TelegramSettings(ChannelSection):
    token: str = ""
    mode: Literal["polling", "webhook"] = "polling"
    webhook: TelegramWebhook = Field(default_factory=TelegramWebhook)
    poll_timeout_s: int = Field(30, ge=0, le=50)
    """Long-polling timeout of getUpdates (polling mode)."""
    commands_menu: bool = True
    """Publish the command menu (setMyCommands) at start when it differs from Telegram's."""

    @model_validator(mode="after")
    def _webhook_needs_secret(self) -> TelegramSettings:
        if self.enabled and self.mode == "webhook" and not self.webhook.secret_token:
            raise ValueError("webhook.secret_token is empty (webhook mode): set TELEGRAM_WEBHOOK_SECRET")
        return self

    def serves_http(self) -> bool:
        return self.mode == "webhook"

    def problems(self) -> list[str]:
        if not self.token:
            return ["channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN in the environment"]
        shape = token_shape_problem(self.token)
        return [f"channels.telegram.token {shape}: set TELEGRAM_BOT_TOKEN to @BotFather's token"] if shape else []


def token_shape_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bot token, never quoting it; None when it can (:mod:`channels.shapes`)."""
    return telegram_token_problem(token)
