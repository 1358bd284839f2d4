"""Settings layers, interpolation, errors that name file and field, and redaction."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.logs import RedactingFilter, setup_logging
from bot.cli.main import app
from bot.config.settings import ConfigError, load_settings


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(env={}, user_config=tmp_path / "none.yaml")
    assert s.channels.enabled() == ["console"]
    assert s.model.provider == "auto" and s.model.api_key == ""
    assert s.store.synchronous == "FULL"
    assert s.origin("model.name") == "default"


def test_layer_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    user = write(tmp_path / "user.yaml", "log: {level: WARNING}\nmodel: {name: user-model, timeout_s: 5}\n")
    write(tmp_path / "config" / "bot.yaml", "model: {name: project-model}\n")
    env = {"BOT_MODEL__TIMEOUT_S": "7", "BOT_BUS__MAX_PENDING": "12"}
    s = load_settings(env=env, user_config=user)
    assert s.log.level == "WARNING" and s.origin("log.level") == f"user file {user}"
    assert s.model.name == "project-model" and s.origin("model.name") == "project file config/bot.yaml"
    assert s.model.timeout_s == 7 and s.origin("model.timeout_s") == "env BOT_MODEL__TIMEOUT_S"
    assert s.bus.max_pending == 12


def test_explicit_config_replaces_project_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "config" / "bot.yaml", "model: {name: from-default-path}\n")
    other = write(tmp_path / "other.yaml", "model: {name: from-flag}\n")
    assert load_settings(other, env={}, user_config=tmp_path / "x").model.name == "from-flag"
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "missing.yaml", env={}, user_config=tmp_path / "x")


def test_env_shorthands_win_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bot.yaml", "model: {base_url: 'http://file'}\nstore: {url: 'sqlite:///file.db'}\n")
    env = {"GEMINI_BASE_URL": "http://env", "DATABASE_URL": "postgresql://u:pw@h/db", "GEMINI_API_KEY": "k-123"}
    s = load_settings(cfg, env=env, user_config=tmp_path / "x")
    assert s.model.url_of("gemini") == "http://env"
    assert s.store.url == "postgresql://u:pw@h/db"
    assert s.model.key_of("gemini") == "k-123" and s.model.main_provider() == "gemini"


def test_interpolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(
        tmp_path / "bot.yaml",
        "bot: {name: '${BOT_NAME}', greeting: 'hi ${WHO:-there}'}\nmodel: {name: '${EMPTY_OK:-}'}\n",
    )
    s = load_settings(cfg, env={"BOT_NAME": "helper"}, user_config=tmp_path / "x")
    assert s.bot.name == "helper"
    assert s.bot.greeting == "hi there"
    assert s.model.name == ""


def test_an_unset_variable_is_an_error_naming_file_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bot.yaml", "model: {name: '${UNSET_VAR}'}\nbot: {name: '${SET_EMPTY}'}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, env={"SET_EMPTY": ""}, user_config=tmp_path / "x")
    text = str(err.value)
    assert f"project file {cfg}: model.name: ${{UNSET_VAR}} is not set" in text and "${UNSET_VAR:-}" in text
    assert "SET_EMPTY" not in text  # set (even empty) is set


@pytest.mark.parametrize("url", ["sqlite://mydb.db", "mysql://u:p@h/db", "sqlite:///", "redis://h/0", "mydb.db"])
def test_a_database_url_the_store_cannot_use_is_refused(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"DATABASE_URL": url}, user_config=tmp_path / "x")
    assert "env DATABASE_URL: store.url:" in str(err.value) and "sqlite:///relative/path.db" in str(err.value)
    cfg = write(tmp_path / "bot.yaml", f"store: {{url: '{url}'}}\n")
    with pytest.raises(ConfigError, match=f"project file {cfg}: store.url:"):
        load_settings(cfg, env={}, user_config=tmp_path / "x")


def test_a_secret_written_in_a_file_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(
        tmp_path / "bot.yaml",
        "channels: {telegram: {token: '123:abc-literal'}, slack: {bot_token: '${SLACK_BOT_TOKEN:-}'}}\n",
    )
    s = load_settings(cfg, env={}, user_config=tmp_path / "x")
    assert len(s.warnings) == 1 and "channels.telegram.token is written in the file" in s.warnings[0]
    assert str(cfg) in s.warnings[0]


def test_bad_field_names_file_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bot.yaml", "bus: {max_concurrent_chats: lots}\nmodel: {colour: blue}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, env={}, user_config=tmp_path / "x")
    text = str(err.value)
    assert f"project file {cfg}: bus.max_concurrent_chats:" in text
    assert f"project file {cfg}: model.colour: unknown field" in text


def test_bad_env_value_names_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="env BOT_STORE__SYNCHRONOUS: store.synchronous"):
        load_settings(env={"BOT_STORE__SYNCHRONOUS": "SOMETIMES"}, user_config=tmp_path / "x")


def test_invalid_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bot.yaml", "model: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_settings(cfg, env={}, user_config=tmp_path / "x")


def test_enabled_channel_without_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bot.yaml", "channels: {telegram: {enabled: true}}\n")
    with pytest.raises(ConfigError, match="channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN"):
        load_settings(cfg, env={}, user_config=tmp_path / "x")


def test_secrets_collected_and_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {
        "GEMINI_API_KEY": "AIza-secret-key",
        "TELEGRAM_BOT_TOKEN": "123:tg-token",
        "DATABASE_URL": "postgresql://bot:pg-pass@db/bot",
    }
    s = load_settings(env=env, user_config=tmp_path / "x")
    assert {"AIza-secret-key", "123:tg-token", "pg-pass"} <= s.secrets()
    dumped = str(s.redacted())
    for secret in ("AIza-secret-key", "123:tg-token", "pg-pass"):
        assert secret not in dumped


def test_config_show_redacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-shown-nowhere")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "slack-signing-xyz")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert "AIza-shown-nowhere" not in result.output and "slack-signing-xyz" not in result.output
    assert "api_key: '***'" in result.output


def test_config_show_reports_bad_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path / "bad.yaml", "http: {port: -1}\n")
    result = CliRunner().invoke(app, ["config", "show", "--config", str(cfg)])
    assert result.exit_code == 2
    assert "http.port" in result.output


def test_log_filter_redacts_messages_args_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    redactor = RedactingFilter({"super-secret-token"})
    logger = logging.getLogger("test.redaction")
    caplog.handler.addFilter(redactor)
    try:
        with caplog.at_level(logging.DEBUG, logger="test.redaction"):
            logger.info("token is %s", "super-secret-token")
            try:
                raise RuntimeError("bad token super-secret-token")
            except RuntimeError:
                logger.exception("failed")
    finally:
        caplog.handler.removeFilter(redactor)
    assert "super-secret-token" not in caplog.text
    assert "token is ***" in caplog.text


def test_setup_logging_installs_the_filter() -> None:
    redactor = setup_logging("INFO", {"abc-secret"})
    root = logging.getLogger()
    assert all(redactor in h.filters for h in root.handlers)


def test_secrets_are_scrubbed_from_the_environment_once_loaded(tmp_path: Path) -> None:
    from bot.config.secrets import scrub_environment

    env = {
        "GEMINI_API_KEY": "AIza-secret-key-0001",
        "TELEGRAM_BOT_TOKEN": "123456:telegram-secret",
        "MY_GITHUB": "ghp_also_secret_0001",
        "HOME": "/home/x",
        "PATH": "/usr/bin",
    }
    settings = load_settings(
        None,
        env=env,
        user_config=tmp_path / "none.yaml",
        overrides={"mcp": {"servers": {"gh": {"command": "x", "env": {"TOKEN": "ghp_also_secret_0001"}}}}},
    )
    assert settings.model.key_of("gemini") == "AIza-secret-key-0001"
    gone = scrub_environment(settings.secrets(), env)
    assert gone == ["GEMINI_API_KEY", "MY_GITHUB", "TELEGRAM_BOT_TOKEN"]
    assert env == {"HOME": "/home/x", "PATH": "/usr/bin"}
    assert settings.mcp.servers["gh"].env == {"TOKEN": "ghp_also_secret_0001"}  # the settings keep them


def test_the_workspace_lives_in_the_data_dir_unless_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(None, env={"BOT_STORE__DATA_DIR": "/data"}, user_config=tmp_path / "x")
    assert s.tools.workspace == Path("/data/workspace")
    s = load_settings(None, env={"BOT_TOOLS__WORKSPACE": "/srv/work"}, user_config=tmp_path / "x")
    assert s.tools.workspace == Path("/srv/work")
