"""A channel is one package plus one line: the toy channel (``tests/channels/toy``), registered here, is asked about
by ``bot init`` (its question is an option too), written into bot.yaml and .env.example, loaded by the settings,
checked by ``bot doctor`` and scrubbed from the environment, though none of those files names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.doctor import diagnose
from bot.cli.main import app
from bot.config.secrets import scrub_environment
from bot.config.settings import Settings, load_settings
from channels.registry import register, unregister
from tests.channels.toy import PLUGIN


@pytest.fixture
def toy() -> Iterator[None]:
    register(PLUGIN)
    try:
        yield
    finally:
        unregister("toy")


def init(tmp_path: Path, *flags: str, answers: str | None = None) -> Settings:
    args = ["init", "--dir", str(tmp_path), *(["--ask"] if answers else ["--yes"]), *flags]
    result = CliRunner().invoke(app, args, input=answers)
    assert result.exit_code == 0, result.output
    return load_settings(tmp_path / "config" / "bot.yaml", env={"TOY_TOKEN": "toy-0123456789"}, user_config=tmp_path)


def test_init_asks_writes_and_the_settings_load_it(toy: None, tmp_path: Path) -> None:
    assert "--toy-mode" in CliRunner().invoke(app, ["init", "-h"]).output
    flags = ("--channels", "toy", "--toy-mode", "hook", "--admin", "toy:ann", "--model", "offline")
    settings = init(tmp_path, *flags)
    assert settings.channels.enabled() == ["toy"]
    toy_section = settings.channels.section("toy")
    assert (toy_section.mode, toy_section.token, toy_section.admins) == ("hook", "toy-0123456789", ["ann"])
    assert settings.http.enabled  # it receives over HTTP: init turned the server on
    written = (tmp_path / ".env.example").read_text()
    assert "# the toy server's settings page\nTOY_TOKEN=" in written
    assert "${TOY_TOKEN}" in (tmp_path / "config" / "bot.yaml").read_text()
    bad = CliRunner().invoke(
        app, ["init", "--yes", "--dir", str(tmp_path / "b"), "--channels", "toy", "--toy-mode", "x"]
    )
    assert bad.exit_code == 2 and "--toy-mode is one of poll|hook" in bad.output


def test_init_asks_the_toy_question_at_a_terminal(toy: None, tmp_path: Path) -> None:
    settings = init(tmp_path, answers="toy\nhook\nann\noffline\nn\nn\n\n\n")
    assert settings.channels.section("toy").mode == "hook"
    assert settings.channels.section("toy").allow_from == ["ann"]


async def test_doctor_checks_it(toy: None, tmp_path: Path) -> None:
    init(tmp_path, "--channels", "toy", "--admin", "toy:ann", "--model", "offline")
    config = tmp_path / "config" / "bot.yaml"
    good = {line.what for line in await diagnose(config, timeout_s=5, env={"TOY_TOKEN": "toy-0123456789"})}
    assert {"toy: enabled (1 allowed, 1 admin(s))", "toy: the toy platform knows this token"} <= good
    bad = [
        line for line in await diagnose(config, timeout_s=5, env={"TOY_TOKEN": "abc"}) if line.what.startswith("toy")
    ]
    assert [(b.ok, b.fix) for b in bad][-1] == (False, "set TOY_TOKEN to toy-…")
    missing = [line for line in await diagnose(config, timeout_s=5, env={"TOY_TOKEN": ""}) if not line.ok]
    assert any(line.what.startswith("toy: channels.toy.token is empty") for line in missing)


def test_the_command_line_and_the_settings_know_it(toy: None, tmp_path: Path) -> None:
    settings = load_settings(
        None, env={"BOT_CHANNELS__TOY__ENABLED": "true", "BOT_CHANNELS__TOY__TOKEN": "toy-1"}, user_config=tmp_path
    )
    assert "toy" in settings.channels.enabled()
    assert settings.channels.section("toy").command_prefix() == "!"
    environ = {"TOY_TOKEN": "toy-1", "HOME": "/root"}
    assert scrub_environment([], environ) == ["TOY_TOKEN"]
    shown = CliRunner().invoke(app, ["config", "show"], env={"BOT_CHANNELS__TOY__MODE": "hook"})
    assert shown.exit_code == 0, shown.output
    assert "toy:" in shown.output and "mode: hook" in shown.output


def test_without_the_line_it_is_unknown(tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["init", "--yes", "--dir", str(tmp_path), "--channels", "toy"])
    assert bad.exit_code == 2 and "unknown channel 'toy'" in bad.output
