"""``bot init``: the written config loads and validates through every layer (with the secrets .env.example lists
exported), for each channel and mode, asked at a terminal or given as flags; nothing is overwritten."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dotenv import dotenv_values
from typer.testing import CliRunner

from bot.cli.main import app
from bot.config.settings import load_settings
from tests.fakes.telegram_server import TOKEN, FakeTelegram


def listed(env_example: Path) -> list[str]:
    return [line.split("=", 1)[0] for line in env_example.read_text().splitlines() if line and not line.startswith("#")]


def load(tmp_path: Path, values: dict[str, str] | None = None) -> object:
    names = listed(tmp_path / ".env.example")
    env = {name: f"value-of-{name.lower()}-0123456789" for name in names}
    if "TELEGRAM_BOT_TOKEN" in env:  # a bot token has the bot's number, a colon, the secret
        env["TELEGRAM_BOT_TOKEN"] = "123456:" + env["TELEGRAM_BOT_TOKEN"]
    shapes = {"SLACK_BOT_TOKEN": "xoxb-1-2-abc", "SLACK_APP_TOKEN": "xapp-1-A2-3-abc",
              "SLACK_SIGNING_SECRET": "0123456789abcdef" * 2, "DISCORD_BOT_TOKEN": "ZGlzY29yZA.init.token"}  # fmt: skip
    env.update({name: value for name, value in shapes.items() if name in env})  # each secret in its shape
    env.update(values or {})
    return load_settings(tmp_path / "config" / "bot.yaml", env=env, user_config=tmp_path / "none.yaml")


@pytest.mark.parametrize(
    ("flags", "secrets"),
    [
        ([], ["GEMINI_API_KEY"]),
        (["--channels", "telegram", "--model", "offline"], ["TELEGRAM_BOT_TOKEN"]),
        (
            ["--channels", "telegram,slack,discord", "--telegram-mode", "webhook", "--public-url", "https://b.example",
             "--slack-mode", "http", "--admin", "telegram:42", "--admin", "slack:U1"],
            ["GEMINI_API_KEY", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "SLACK_BOT_TOKEN",
             "SLACK_SIGNING_SECRET", "DISCORD_BOT_TOKEN", "BOT_METRICS__TOKEN"],
        ),
        (["--channels", "slack", "--scale", "--model", "openai"],
         ["OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DATABASE_URL", "REDIS_URL", "BOT_METRICS__TOKEN"]),
    ],
)  # fmt: skip
def test_flags_write_a_config_that_loads(tmp_path: Path, flags: list[str], secrets: list[str]) -> None:
    result = CliRunner().invoke(app, ["init", "--yes", "--dir", str(tmp_path), *flags])
    assert result.exit_code == 0, result.output
    assert f"copy {tmp_path / '.env.example'} to {tmp_path / '.env'}" in result.output
    # --scale: a compose.yaml in the project, which reads the project's .env (tests/deploy checks what it runs).
    assert ("docker compose up -d" in result.output) == ("--scale" in flags) == (tmp_path / "compose.yaml").is_file()
    text = (tmp_path / "config" / "bot.yaml").read_text()
    assert text.startswith("# Written by `bot init`")
    assert listed(tmp_path / ".env.example") == secrets
    example = (tmp_path / ".env.example").read_text().splitlines()
    for name in secrets:  # each with where to get it on the line above
        assert example[example.index(f"{name}=") - 1].startswith("# ")
    overrides = (
        {"DATABASE_URL": "postgresql://bot:pw@127.0.0.1:5432/bot", "REDIS_URL": "redis://127.0.0.1:6379/0"}
        if "--scale" in flags
        else {}
    )
    settings = load(tmp_path, overrides)
    enabled = settings.channels.enabled()  # type: ignore[attr-defined]
    wanted = flags[flags.index("--channels") + 1].split(",") if "--channels" in flags else ["console"]
    assert sorted(enabled) == sorted(wanted)
    if "--admin" in flags:
        assert settings.channels.telegram.admins == ["42"]  # type: ignore[attr-defined]
        assert settings.channels.telegram.webhook.url == "https://b.example/telegram/webhook"  # type: ignore[attr-defined]
        assert settings.http.enabled  # type: ignore[attr-defined]
    # The secrets are referenced, never written.
    assert "value-of" not in text and "${" in text or secrets == ["GEMINI_API_KEY"]


def test_questions_at_a_terminal(tmp_path: Path) -> None:
    # A @name and a short Discord id are refused with how to find the id, and asked again.
    answers = ["discord, telegram", "polling", "1234", "123456789012345678", "@me", "999", "offline", "n", "y"]
    answers += ["", "", ""]  # the secrets: skipped, to fill in later
    result = CliRunner().invoke(app, ["init", "--ask", "--dir", str(tmp_path)], input="\n".join(answers) + "\n")
    assert "'1234' is not a Discord user id" in result.output and "Copy User ID" in result.output
    assert "'@me' is a @name, not a user id" in result.output and "/whoami" in result.output
    assert result.exit_code == 0, result.output
    settings = load(tmp_path)
    assert sorted(settings.channels.enabled()) == ["discord", "telegram"]  # type: ignore[attr-defined]
    assert settings.channels.discord.admins == ["123456789012345678"]  # type: ignore[attr-defined]
    assert settings.channels.telegram.allow_from == ["999"]  # type: ignore[attr-defined]
    assert settings.http.enabled  # type: ignore[attr-defined]


def test_nothing_is_overwritten_and_bad_flags_are_refused(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--yes", "--dir", str(tmp_path)]).exit_code == 0
    (tmp_path / "config" / "bot.yaml").write_text("# mine\n")
    again = runner.invoke(app, ["init", "--yes", "--dir", str(tmp_path)])
    assert again.exit_code == 1 and "exists; --force overwrites it" in again.output
    assert (tmp_path / "config" / "bot.yaml").read_text() == "# mine\n"
    assert runner.invoke(app, ["init", "--yes", "--force", "--dir", str(tmp_path)]).exit_code == 0
    bad = runner.invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--force", "--channels", "irc"])
    assert bad.exit_code == 2 and "unknown channel 'irc'" in bad.output
    bad = runner.invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--force", "--admin", "42"])
    assert bad.exit_code == 2 and "CHANNEL:USER_ID" in bad.output


@pytest.mark.parametrize("check", [True, False])
async def test_secrets_are_asked_hidden_checked_for_shape_written_and_tested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: bool
) -> None:
    telegram = FakeTelegram()
    await telegram.start()
    monkeypatch.setenv("BOT_CHANNELS__TELEGRAM__API_BASE", telegram.base_url)
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    # The token pasted with "Bot " is refused offline and asked again; then the right one.
    answers = ["telegram", "polling", "999", "offline", "n", "n", "Bot " + TOKEN, TOKEN]
    flags = ["init", "--ask", "--dir", str(tmp_path), *([] if check else ["--no-check"])]
    try:
        result = await asyncio.to_thread(CliRunner().invoke, app, flags, input="\n".join(answers) + "\n")
    finally:
        await telegram.stop()
    assert result.exit_code == 0, result.output
    assert TOKEN not in result.output and TOKEN.split(":")[1] not in result.output  # typing is hidden
    assert "TELEGRAM_BOT_TOKEN starts with 'Bot' and a space" in result.output
    dotenv = tmp_path / ".env"
    assert dotenv.stat().st_mode & 0o777 == 0o600
    assert (
        dotenv_values(dotenv) == {"TELEGRAM_BOT_TOKEN": TOKEN} and f"TELEGRAM_BOT_TOKEN={TOKEN}\n" in dotenv.read_text()
    )
    assert "next: `bot doctor`, then `bot run`" in result.output
    asked = [call.method for call in telegram.calls]
    if check:  # tested against the platform, as bot doctor does
        assert "✓ telegram token: the bot @" in result.output and asked.count("getMe") >= 1
    else:
        assert "getMe" not in asked and "Testing them" not in result.output
    text = (tmp_path / "config" / "bot.yaml").read_text()
    assert "provider: offline" in text and TOKEN not in text


def test_the_model_chosen_is_the_one_written(tmp_path: Path) -> None:
    for model in ("gemini", "offline", "openai"):
        flags = ["init", "--yes", "--force", "--dir", str(tmp_path), "--model", model]
        result = CliRunner().invoke(
            app, [*flags, *(["--base-url", "http://127.0.0.1:9/v1"] if model == "openai" else [])]
        )
        assert result.exit_code == 0, result.output
        settings = load(tmp_path)
        assert settings.model.provider == model  # type: ignore[attr-defined]
    assert settings.model.base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]


def test_choosing_the_web_chat_turns_the_console_on_with_its_token_on_localhost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--channels", "console,web"])
    assert result.exit_code == 0, result.output
    assert "BOT_WEB__TOKEN" in listed(tmp_path / ".env.example")
    settings = load(tmp_path)
    assert settings.web.enabled and settings.channels.web.enabled  # type: ignore[attr-defined]
    assert settings.http.enabled and settings.http.host == "127.0.0.1"  # type: ignore[attr-defined]
    assert len(settings.web.token) >= 16  # type: ignore[attr-defined]
    # Without the console, the web channel is unreachable: bot doctor says so.
    (tmp_path / "config" / "bot.yaml").write_text("channels:\n  web: {enabled: true}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    doctor = CliRunner().invoke(app, ["doctor"])
    assert "✗ web: the web channel is on but the web console is off" in doctor.output
    assert "web: no admin" not in doctor.output  # its admins are the console's


def test_a_swapped_slack_pair_is_asked_again_under_each_right_name(tmp_path: Path) -> None:
    from bot.cli.init_secrets import shape_problems

    result = CliRunner().invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--channels", "slack"])
    assert result.exit_code == 0, result.output
    swapped = {"SLACK_BOT_TOKEN": "xapp-1-A2-3-abc", "SLACK_APP_TOKEN": "xoxb-1-2-abc", "GEMINI_API_KEY": "k"}
    wrong = shape_problems(tmp_path / "config" / "bot.yaml", swapped, set(swapped))
    assert wrong["SLACK_BOT_TOKEN"].startswith("starts with xapp-…: that is the app token")
    assert wrong["SLACK_APP_TOKEN"].startswith("starts with xoxb-…: that is the bot token")
