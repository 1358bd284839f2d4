"""``bot init`` for Telegram: polling or a webhook, the token from @BotFather."""

from __future__ import annotations

from collections.abc import Mapping

from channels.setup import ChannelSetup, Question, Secret


class TelegramSetup(ChannelSetup):
    questions = (
        Question("mode", "Telegram: polling or webhook", "polling", ("polling", "webhook")),
        Question(
            "public_url", "Public HTTPS base URL (e.g. https://bot.example.com)", flag="public-url",
            when=("mode", "webhook"),
        ),
    )  # fmt: skip
    id_hint = "Telegram user ids; strangers are told theirs"

    def lines(self, answers: Mapping[str, str]) -> list[str]:
        mode = answers.get("mode", "polling")
        lines = [
            "token: ${TELEGRAM_BOT_TOKEN}",
            "mention_policy: mention   # groups: answer only when mentioned (or all)",
            f"mode: {mode}",
        ]
        if mode == "webhook":
            base = answers.get("public_url", "").rstrip("/")
            url = base + "/telegram/webhook" if base else ""
            lines += [
                "webhook:",
                f"  url: {url or 'https://bot.example.com/telegram/webhook'}   # public HTTPS, to http.port",
                "  path: /telegram/webhook",
                "  secret_token: ${TELEGRAM_WEBHOOK_SECRET}",
            ]
        return lines

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        found = [Secret("TELEGRAM_BOT_TOKEN", "@BotFather → /newbot", "123456:placeholder")]
        if self.serves_http(answers):
            found.append(Secret("TELEGRAM_WEBHOOK_SECRET", "any long random string (checked on every webhook request)"))
        return found

    def serves_http(self, answers: Mapping[str, str]) -> bool:
        return answers.get("mode") == "webhook"


SETUP = TelegramSetup()
