"""``bot doctor`` against a good setup (Telegram, Slack and Discord fakes on loopback, a migrated database, a
Gemini fake answering the 1-token call, an MCP server over stdio, valid agent files) and a broken one (a
revoked Telegram token, a refused Slack token, Discord unreachable, an old database, Redis down, the model
refusing its key, an MCP server that cannot start, a malformed agent file): one ✓/✗ line each, fixes, exit
codes."""

from __future__ import annotations

import socket
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.doctor import Line, diagnose
from bot.store.sql.migrate import head_revision, migrate_url
from bot.web.auth import hash_password
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.mcp_gateway import STDIO_FAKE
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import TOKEN, FakeTelegram

GEMINI_KEY = "AIzaSy-doctor-test-key-0123456789"


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, Any]]:
    telegram, slack, discord, gemini = FakeTelegram(), FakeSlack(), FakeDiscord(), FakeGemini()
    for fake in (telegram, slack, discord, gemini):
        await fake.start()
    try:
        yield {"telegram": telegram, "slack": slack, "discord": discord, "gemini": gemini}
    finally:
        for fake in (telegram, slack, discord, gemini):
            await fake.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_setup(tmp_path: Path, fakes: dict[str, Any], **changes: Any) -> Path:
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "helper.md").write_text("---\nname: helper\nrunner: react\n---\nHelp.\n", encoding="utf-8")
    config: dict[str, Any] = {
        "store": {"data_dir": str(tmp_path / "data")},
        "agents": {"dirs": [str(agents)]},
        "http": {"enabled": True, "port": free_port()},
        "channels": {
            "console": {"enabled": False},
            "telegram": {"enabled": True, "token": "${TELEGRAM_BOT_TOKEN}", "api_base": fakes["telegram"].base_url,
                         "allow_from": ["111"]},
            "slack": {"enabled": True, "bot_token": "${SLACK_BOT_TOKEN}", "app_token": "${SLACK_APP_TOKEN}",
                      "api_base": fakes["slack"].base_url, "admins": ["U1"]},
            "discord": {"enabled": True, "token": "${DISCORD_BOT_TOKEN}", "api_base": fakes["discord"].url,
                        "allow_from": ["*"]},
        },
        "mcp": {"servers": {"echoer": {"command": sys.executable, "args": [str(STDIO_FAKE)]}}},
    }  # fmt: skip
    for dotted, value in changes.items():
        cursor = config
        *parents, last = dotted.split(".")
        for part in parents:
            cursor = cursor.setdefault(part, {})
        cursor[last] = value
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def environment(fakes: dict[str, Any], **extra: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "SLACK_BOT_TOKEN": "xoxb-doctor-test",
        "SLACK_APP_TOKEN": "xapp-doctor-test",
        "DISCORD_BOT_TOKEN": "ZGlzY29yZA.doctor.test-token",  # the shape of one: three dot-separated parts
        "GEMINI_API_KEY": GEMINI_KEY,
        "GEMINI_BASE_URL": fakes["gemini"].base_url,
        **extra,
    }


def by_text(lines: list[Line], start: str) -> Line:
    return next(line for line in lines if line.what.startswith(start))


async def test_a_good_setup_passes_every_check(tmp_path: Path, fakes: dict[str, Any]) -> None:
    config = write_setup(tmp_path, fakes)
    (tmp_path / "data").mkdir()
    await migrate_url(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'bot.db'}")
    fakes["gemini"].reply_text("OK")
    lines = await diagnose(config, timeout_s=10, env=environment(fakes))
    rendered = "\n".join(line.render() for line in lines)
    assert all(line.ok for line in lines), rendered
    assert by_text(lines, "telegram token").what.startswith("telegram token: the bot @")
    assert by_text(lines, "slack bot token").ok and by_text(lines, "slack app token").ok
    assert by_text(lines, "discord token").what.startswith("discord token: logged in as")
    assert by_text(lines, "database").what.endswith(f"migrations current ({head_revision()})")
    assert "answered a 1-token request" in by_text(lines, "model gemini/").what
    assert fakes["gemini"].requests[0].body["generationConfig"]["maxOutputTokens"] == 1
    assert by_text(lines, "mcp echoer").what.startswith("mcp echoer: up, ")
    assert by_text(lines, "agents").what.startswith("agents: 4 valid (1 from files; project agents in ")
    assert "is free" in by_text(lines, "http").what
    assert by_text(lines, "telegram:").what == "telegram: enabled (1 allowed, 0 admin(s))"
    assert by_text(lines, "discord:").what == "discord: enabled (everyone, 0 admin(s))"
    for secret in (TOKEN, GEMINI_KEY, "xoxb-doctor-test"):
        assert secret not in rendered


async def test_a_broken_setup_names_each_problem_and_its_fix(tmp_path: Path, fakes: dict[str, Any]) -> None:
    closed = free_port()
    config = write_setup(
        tmp_path,
        fakes,
        **{
            "channels.discord.api_base": f"http://127.0.0.1:{closed}",
            "mcp.servers.broken": {"command": sys.executable, "args": [str(STDIO_FAKE), "--exit-at-start", "3"]},
        },
    )
    (tmp_path / "agents" / "bad.md").write_text("---\nname: bad\nrunner: sometimes\n---\nx\n", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    db = sqlite3.connect(data / "bot.db")
    db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    db.execute("INSERT INTO alembic_version VALUES ('0007')")
    db.commit()
    db.close()
    fakes["slack"].fail("auth.test", status=200, error="invalid_auth", retry_after=None)
    fakes["gemini"].fail(400, "API key not valid. Please pass a valid API key.")
    env = environment(fakes, TELEGRAM_BOT_TOKEN="123456:AAH-revoked-token-000000000000000")
    lines = await diagnose(config, timeout_s=5, env=env)
    failed = {line.what.split(":")[0]: line for line in lines if not line.ok}
    assert failed["telegram token"].fix.startswith("TELEGRAM_BOT_TOKEN is revoked or wrong")
    assert "invalid_auth" in failed["slack bot token"].what and "SLACK_BOT_TOKEN" in failed["slack bot token"].fix
    assert failed["discord"].what.startswith(f"discord: cannot log in at http://127.0.0.1:{closed}")
    assert "is at 0007" in failed["database"].what and failed["database"].fix == "start the bot once: it migrates"
    model = next(line for line in lines if line.what.startswith("model gemini/"))
    assert not model.ok and "API key" in model.what
    assert not by_text(lines, "mcp broken").ok and by_text(lines, "mcp echoer").ok
    assert "bad.md: runner" in next(line.what for line in lines if line.what.startswith("agent file"))
    for secret in ("AAH-revoked-token", GEMINI_KEY):
        assert secret not in "\n".join(line.render() for line in lines)

    # Nobody allowed: the first-hour mistake.
    config = write_setup(tmp_path, fakes, **{"channels.slack.admins": []})
    fakes["gemini"].reply_text("OK")
    lines = await diagnose(config, timeout_s=5, env=environment(fakes))
    nobody = by_text(lines, "slack: nobody may talk")
    assert not nobody.ok and "bot pair approve CODE --admin" in nobody.fix and "channels.slack.admins" in nobody.fix

    # Scaled out: PostgreSQL and Redis both down.
    config = write_setup(
        tmp_path,
        fakes,
        **{"bus.url": f"redis://127.0.0.1:{closed}/0", "store.url": f"postgresql://bot:pw@127.0.0.1:{closed}/bot"},
    )
    fakes["gemini"].reply_text("OK")
    lines = await diagnose(config, timeout_s=5, env=environment(fakes))
    assert "does not answer" in by_text(lines, "bus").what and by_text(lines, "bus").fix == "check bus.url / REDIS_URL"
    assert by_text(lines, "database").what.startswith(f"database: cannot connect to 127.0.0.1:{closed}/bot")
    assert "pw" not in by_text(lines, "database").what

    # Webhook settings: Telegram only posts to HTTPS.
    config = write_setup(
        tmp_path, fakes, **{"channels.telegram.mode": "webhook", "channels.telegram.webhook": {
            "url": "http://bot.example.com/telegram/webhook", "secret_token": "${TELEGRAM_WEBHOOK_SECRET}"}}
    )  # fmt: skip
    fakes["gemini"].reply_text("OK")
    lines = await diagnose(config, timeout_s=5, env={**environment(fakes), "TELEGRAM_WEBHOOK_SECRET": "s3cret-hook"})
    assert by_text(lines, "telegram webhook").what.endswith("is not HTTPS")


async def test_the_web_console_is_checked(tmp_path: Path) -> None:
    admin = hash_password("correct horse battery")
    base = {"store": {"data_dir": str(tmp_path / "d")}, "agents": {"dirs": []}, "http": {"port": 0}}
    config = tmp_path / "web.yaml"
    config.write_text(yaml.safe_dump({**base, "web": {"enabled": True, "users": [
        {"name": "alice", "role": "admin", "password_hash": admin}]}}))  # fmt: skip
    lines = await diagnose(config, timeout_s=5, env={"BOT_WEB__TOKEN": "short"})
    assert by_text(lines, "web: the console").what.endswith("(1 admin(s), 0 viewer(s), an admin token)")
    assert not by_text(lines, "web: the admin token").ok
    config.write_text(yaml.safe_dump({**base, "http": {"host": "0.0.0.0", "port": 0}, "web": {"enabled": True,
        "users": [{"name": "victor", "role": "viewer", "password_hash": admin}]}}))  # fmt: skip
    lines = await diagnose(config, timeout_s=5, env={})
    assert not by_text(lines, "web: nobody can act").ok
    assert by_text(lines, "web: served on 0.0.0.0").fix.startswith("put it behind an HTTPS proxy")


def test_cli_exit_codes_and_a_config_that_does_not_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.cli.main import app

    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {nmae: x}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["doctor", "-c", str(bad)])
    assert result.exit_code == 1
    assert "✗ config: invalid configuration" in result.output and "model.nmae: unknown field" in result.output
    assert "fix: edit" in result.output

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "d")}, "agents": {"dirs": []}}))
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["doctor", "-c", str(good)])
    assert result.exit_code == 0, result.output
    assert "✓ model: the offline stand-in" in result.output and "checks passed." in result.output
