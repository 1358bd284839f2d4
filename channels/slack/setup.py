"""``bot init`` for Slack: Socket Mode (no public URL) or events over HTTP."""

from __future__ import annotations

from collections.abc import Mapping

from channels.setup import ChannelSetup, Question, Secret


class SlackSetup(ChannelSetup):
    questions = (Question("mode", "Slack: socket or http", "socket", ("socket", "http")),)
    id_hint = "Slack member ids (U…)"

    def lines(self, answers: Mapping[str, str]) -> list[str]:
        mode = answers.get("mode", "socket")
        return [
            "bot_token: ${SLACK_BOT_TOKEN}",
            "app_token: ${SLACK_APP_TOKEN}" if mode == "socket" else "signing_secret: ${SLACK_SIGNING_SECRET}",
            f"mode: {mode}   # socket: no public URL needed; http: events at http.port/slack/events",
        ]

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        token = Secret(
            "SLACK_BOT_TOKEN",
            "api.slack.com/apps → OAuth & Permissions → Bot User OAuth Token (xoxb-…)",
            "xoxb-placeholder",
        )
        if self.serves_http(answers):
            return [token, Secret("SLACK_SIGNING_SECRET", "Basic Information → Signing Secret", "0" * 32)]
        return [
            token,
            Secret(
                "SLACK_APP_TOKEN",
                "Basic Information → App-Level Tokens, scope connections:write (xapp-…)",
                "xapp-placeholder",
            ),
        ]

    def serves_http(self, answers: Mapping[str, str]) -> bool:
        return answers.get("mode") == "http"


SETUP = SlackSetup()
