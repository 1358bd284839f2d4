"""``channels.slack``: the Slack channel's settings."""

from __future__ import annotations

from typing import Literal

from channels.base import ChannelSection
from channels.shapes import slack_signing_secret_problem, slack_token_problem


class SlackSettings(ChannelSection):
    bot_token: str = ""
    """The bot token (``xoxb-…``)."""
    app_token: str = ""
    """The app-level token (``xapp-…``, scope ``connections:write``): Socket Mode only."""
    signing_secret: str = ""
    """Verifies every request in HTTP mode."""
    mode: Literal["socket", "http"] = "socket"
    reply_in_thread: bool = True
    """A top-level mention is answered in a thread under it (its own conversation); false: in the channel."""
    events_path: str = "/slack/events"
    """HTTP mode: the route on the shared ``http`` server for events, button presses and the slash command."""
    slash_command: str = "/bot"
    """The slash command set up in the Slack app: ``/bot help`` runs ``/help``."""
    typing_reaction: str = "eyes"
    """Slack has no typing indicator for bots: this reaction marks the message being answered; empty: none."""

    def serves_http(self) -> bool:
        return self.mode == "http"

    def command_prefix(self) -> str:
        """Slack intercepts ``/help``, ``/start``… itself: its users type them after the app's own command."""
        return f"/{self.slash_command.strip().lstrip('/')} "

    def problems(self) -> list[str]:
        found = []
        if not self.bot_token:
            found.append("channels.slack.bot_token is empty: set SLACK_BOT_TOKEN in the environment")
        if self.mode == "socket" and not self.app_token:
            found.append("channels.slack.app_token is empty (socket mode): set SLACK_APP_TOKEN")
        if self.mode == "http" and not self.signing_secret:
            found.append("channels.slack.signing_secret is empty (http mode): set SLACK_SIGNING_SECRET")
        return found + self._shape_problems()

    def _shape_problems(self) -> list[str]:
        """Offline: each secret set has its shape (a swapped pair, a pasted prefix), never quoted back."""
        checks = [
            ("bot_token", self.bot_token, slack_token_problem(self.bot_token, "bot"), "SLACK_BOT_TOKEN",
             "the Bot User OAuth Token (xoxb-…, OAuth & Permissions)"),
            ("app_token", self.app_token, slack_token_problem(self.app_token, "app"), "SLACK_APP_TOKEN",
             "an app-level token (xapp-…, Basic Information → App-Level Tokens)"),
            ("signing_secret", self.signing_secret, slack_signing_secret_problem(self.signing_secret),
             "SLACK_SIGNING_SECRET", "the Signing Secret (Basic Information → App Credentials)"),
        ]  # fmt: skip
        return [
            f"channels.slack.{key} {problem}: set {variable} to {what}"
            for key, value, problem, variable, what in checks
            if value and problem
        ]
