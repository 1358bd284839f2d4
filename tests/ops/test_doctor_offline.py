"""Offline, before any network: every platform's secrets have their shape checked (Slack's two tokens swapped, a
``Bot ``-prefixed Discord token, a token pasted as the signing secret) by ``bot doctor`` and at ``bot run``'s
start (exit 2), saying what is wrong without quoting the secret; ``bot doctor --json`` for CI; a model that cannot
be reached is a network problem, not "check the API key"; and a channel that cannot connect is logged once per
change of state with a count, not at every try."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.main import app
from bot.clock import FakeClock
from bot.gateway.starter import ChannelStarter
from bot.retry import Backoff
from channels.discord.settings import DiscordSettings
from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings
from tests.waiting import eventually

APP_TOKEN = "xapp-1-A0123-4567-9f8e7d6c5b4a3f2e1d0c"
BOT_TOKEN = "xoxb-1234-5678-AbCdEfGhIjKlMnOp"
DISCORD = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Slack (socket mode) and Discord enabled with ``${VAR}`` secrets; nothing else needs the network."""
    monkeypatch.chdir(tmp_path)
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "BOT_HOME"):
        monkeypatch.delenv(name, raising=False)
    config: dict[str, Any] = {
        "store": {"data_dir": str(tmp_path / "data")},
        "agents": {"dirs": []},
        "model": {"provider": "offline"},
        "http": {"enabled": False},
        "channels": {
            "console": {"enabled": False},
            "slack": {"enabled": True, "bot_token": "${SLACK_BOT_TOKEN}", "app_token": "${SLACK_APP_TOKEN}",
                      "api_base": f"http://127.0.0.1:{free_port()}", "admins": ["U1"]},
            "discord": {"enabled": True, "token": "${DISCORD_BOT_TOKEN}", "api_base": f"http://127.0.0.1:{free_port()}",
                        "admins": ["198622483471925248"]},
        },
    }  # fmt: skip
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def mistaken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two Slack tokens swapped, the Discord token pasted with its ``Bot `` prefix."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", APP_TOKEN)
    monkeypatch.setenv("SLACK_APP_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("DISCORD_BOT_TOKEN", f"Bot {DISCORD}")


def test_doctor_names_swapped_slack_tokens_and_a_bot_prefix_offline(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mistaken(monkeypatch)
    result = CliRunner().invoke(app, ["doctor", "-c", str(project), "--timeout", "2"])
    out = result.output
    assert result.exit_code == 1, out
    assert "✗ slack: channels.slack.bot_token starts with xapp-…: that is the app token; SLACK_BOT_TOKEN and " \
           "SLACK_APP_TOKEN look swapped" in out  # fmt: skip
    assert "fix: set SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-…" in out
    assert "channels.slack.app_token starts with xoxb-…: that is the bot token" in out
    assert "✗ discord: channels.discord.token starts with 'Bot' and a space: the bot adds that itself" in out
    assert "fix: set DISCORD_BOT_TOKEN to the token from the Developer Portal" in out
    for secret in (APP_TOKEN, BOT_TOKEN, DISCORD, APP_TOKEN[5:], DISCORD[:20]):
        assert secret not in out


def test_bot_run_refuses_the_same_mistakes_before_any_network(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mistaken(monkeypatch)
    result = CliRunner().invoke(app, ["run", "-c", str(project)])
    assert result.exit_code == 2, result.output
    assert "config error" in result.output and "look swapped" in result.output and "'Bot'" in result.output
    assert APP_TOKEN not in result.output and DISCORD not in result.output


def test_doctor_json_is_one_object_for_ci(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mistaken(monkeypatch)
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project), "--timeout", "2"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["failed"] >= 2 and report["passed"] >= 1
    slack = next(c for c in report["checks"] if c["name"] == "slack" and "bot_token" in c["detail"])
    assert slack["status"] == "fail" and slack["fix"].startswith("set SLACK_BOT_TOKEN to ")
    assert {c["status"] for c in report["checks"]} <= {"ok", "warn", "fail"}
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in report["checks"])
    assert APP_TOKEN not in result.stdout

    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("DISCORD_BOT_TOKEN", DISCORD)
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project), "--timeout", "2"])
    report = json.loads(result.stdout)
    shapes = [c for c in report["checks"] if "starts with" in c["detail"] or "not a bot token" in c["detail"]]
    assert not shapes  # the right shapes pass offline; the platforms (not listening here) are what fails now


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (SlackSettings(enabled=True, bot_token=BOT_TOKEN, app_token=APP_TOKEN), []),
        (SlackSettings(enabled=True, bot_token="xoxp-1-2-3", app_token=APP_TOKEN), ["that is a user token"]),
        (SlackSettings(enabled=True, bot_token=f'"{BOT_TOKEN}"', app_token=APP_TOKEN), ["wrapped in quotes"]),
        (SlackSettings(enabled=True, bot_token=BOT_TOKEN, app_token=f"{APP_TOKEN}\n"), ["line break"]),
        (SlackSettings(enabled=True, mode="http", bot_token=BOT_TOKEN, signing_secret=BOT_TOKEN),
         ["starts with xoxb-…: that is a token, not the signing secret"]),
        (SlackSettings(enabled=True, mode="http", bot_token=BOT_TOKEN, signing_secret="s3cr3t-not-hex"),
         ["32 hexadecimal digits (0-9, a-f); this is 14 characters"]),
        (SlackSettings(enabled=True, mode="http", bot_token=BOT_TOKEN, signing_secret="0a" * 16), []),
        (DiscordSettings(enabled=True, token=DISCORD), []),
        (DiscordSettings(enabled=True, token=f"Bearer {DISCORD}"), ["starts with 'Bearer'"]),
        (DiscordSettings(enabled=True, token="x" * 32), ["looks like the OAuth2 client secret"]),
        (DiscordSettings(enabled=True, token="abc.def"), ["here 2 part(s), 7 characters"]),
        (TelegramSettings(enabled=True, token="bot123456:AAH-abc"), ["starts with 'bot'"]),
        (TelegramSettings(enabled=True, token="123456:AAH-abc"), []),
    ],
)  # fmt: skip
def test_each_platforms_shape_says_what_is_wrong_without_the_secret(section: Any, expected: list[str]) -> None:
    problems = section.problems()
    assert len(problems) == len(expected), problems
    for problem, words in zip(problems, expected, strict=True):
        assert words in problem
        assert "xoxb-1234" not in problem and DISCORD not in problem and "AAH-abc" not in problem


def test_a_model_that_cannot_be_reached_is_a_network_fix_not_the_api_key(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("DISCORD_BOT_TOKEN", DISCORD)
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSy-offline-doctor-0123456789")
    monkeypatch.setenv("GEMINI_BASE_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens: refused
    monkeypatch.setenv("BOT_MODEL__PROVIDER", "gemini")
    monkeypatch.setenv("BOT_MODEL__MAX_RETRIES", "0")
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project), "--timeout", "5"])
    model = next(c for c in json.loads(result.stdout)["checks"] if c["name"].startswith("model gemini/"))
    assert model["status"] == "fail" and "Could not reach Gemini" in model["detail"]
    assert "check the network" in model["fix"] and "API key was not checked" in model["fix"]


class Reaching:
    """A channel whose start connects to a loopback port: refused until something listens there."""

    name = "telegram"

    def __init__(self, port: int) -> None:
        self.port = port
        self.tries = 0

    async def start(self, _inbox: Any) -> None:
        self.tries += 1
        _reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.close()

    async def stop(self) -> None:
        return None


async def test_a_channel_that_cannot_connect_is_told_once_then_once_when_it_is_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, port = FakeClock(), free_port()
    channel = Reaching(port)
    starter = ChannelStarter([channel], inbox=None, backoff=Backoff(first_s=1, cap_s=60), clock=clock)  # type: ignore[arg-type]
    tries = 14
    with caplog.at_level(logging.DEBUG, logger="bot.gateway.starter"):
        await starter.start_one(channel)
        while channel.tries < tries:
            await eventually(lambda: clock.pending, what="the retry waiting on the clock")
            before = channel.tries
            await clock.advance(60)
            await eventually(lambda: channel.tries > before and clock.pending, what="the next try")  # noqa: B023
        server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", port)
        try:
            await eventually(lambda: clock.pending, what="the retry waiting on the clock")
            await clock.advance(60)
            await eventually(lambda: starter.status["telegram"] == "up", what="the channel up")
        finally:
            server.close()
            await server.wait_closed()
            await starter.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("channel telegram: cannot start (connection refused); retrying every ≤60 s")
    assert warnings[0].endswith("quiet until it changes")
    assert warnings[1] == f"channel telegram: up after {tries} failed tries"


def test_a_mistyped_value_is_echoed_and_a_variable_offered_only_where_one_fixes_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("SLACK_BOT_TOKEN", BOT_TOKEN), ("SLACK_APP_TOKEN", APP_TOKEN), ("DISCORD_BOT_TOKEN", DISCORD)):
        monkeypatch.setenv(name, value)
    text = project.read_text().replace("http:\n  enabled: false", "http:\n  enabled: false\n  prot: 8080")
    project.write_text(text)
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project)])
    config = json.loads(result.stdout)["checks"][0]
    assert "http.prot: unknown field (did you mean 'port'?)" in config["detail"]
    assert "variable" not in config["fix"] and config["fix"].startswith("edit the file named above")

    project.write_text(text.replace("  prot: 8080\n", ""))
    monkeypatch.setenv("BOT_ROUTING__STRATEGY", "hybird")
    monkeypatch.setenv("BOT_CHANNELS__SLACK__BOT_TOKEN", "xoxb-typo")
    monkeypatch.setenv("BOT_CHANNELS__SLACK__MODE", "sokcet")
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project)])
    config = json.loads(result.stdout)["checks"][0]
    assert "routing.strategy: Input should be 'rule', 'llm' or 'hybrid' (did you mean 'hybrid'?); the value is " \
           "'hybird'" in config["detail"]  # fmt: skip
    assert "the value is 'sokcet'" in config["detail"]
    assert config["fix"].startswith("fix or unset the BOT_… variable named above")

    monkeypatch.delenv("BOT_ROUTING__STRATEGY")
    monkeypatch.delenv("BOT_CHANNELS__SLACK__MODE")
    monkeypatch.setenv("BOT_HTTP__PORT", "80a")
    monkeypatch.setenv("BOT_CHANNELS__SLACK__APP_TOKEN", "{'not': 'a token'}")
    result = CliRunner().invoke(app, ["doctor", "--json", "-c", str(project)])
    detail = json.loads(result.stdout)["checks"][0]["detail"]
    assert "http.port: Input should be a valid integer" in detail and "the value is '80a'" in detail
    assert "channels.slack.app_token" in detail and "not" not in detail.split("app_token")[1]  # a secret's: never
