"""A new operator's set-up, read as they wrote it: ``.env`` files, relative paths from wherever ``bot`` starts,
config errors that name the file and the field (with a did-you-mean), a Telegram token checked before the
Telegram library is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.doctor import diagnose
from bot.config.settings import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project as ``bot init`` lays it out, and a working directory elsewhere."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("TELEGRAM_BOT_TOKEN", "BOT_NAME_FROM_ENV", "WHO"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "x"
    write(root / "config" / "bot.yaml", "bot: {name: '${BOT_NAME_FROM_ENV}'}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return root


def test_dotenv_beside_the_project_is_read_and_the_environment_wins(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project / "config" / "bot.yaml"
    write(project / ".env", "BOT_NAME_FROM_ENV=from-project-env\nBOT_LOG__LEVEL=DEBUG\nWHO=project\n")
    write(Path.cwd() / ".env", "BOT_NAME_FROM_ENV=from-cwd-env\nWHO=cwd\nBOT_BOT__GREETING=hello from cwd\n")
    settings = load_settings(config)
    assert settings.bot.name == "from-project-env", "the project's .env comes before the working directory's"
    assert settings.log.level == "DEBUG" and settings.bot.greeting == "hello from cwd"
    assert settings.env_files is not None and settings.env_files.read == (project / ".env", Path.cwd() / ".env")
    monkeypatch.setenv("BOT_NAME_FROM_ENV", "from-the-environment")
    assert load_settings(config).bot.name == "from-the-environment", "the real environment wins"
    import os

    assert "WHO" not in os.environ, "a .env value goes to the settings, not to child processes"
    write(project / "config" / ".env", "BOT_LOG__LEVEL=ERROR\n")
    assert load_settings(config).log.level == "ERROR", "the .env beside the config file comes first"


def test_an_unset_variable_names_file_field_and_where_dotenv_was_looked_for(project: Path) -> None:
    config = project / "config" / "bot.yaml"
    with pytest.raises(ConfigError) as err:
        load_settings(config)
    text = str(err.value)
    assert f"project file {config}: bot.name: ${{BOT_NAME_FROM_ENV}} is not set" in text
    assert ".env" in text and str(project / ".env") in text and str(Path.cwd() / ".env") in text
    assert f"{config}.bot.name" not in text


def test_a_mistyped_key_or_value_gets_a_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = write(
        tmp_path / "bot.yaml",
        "chanels: {}\nchannels: {telegram: {tokn: x}}\nrouting: {strategy: hybird}\n"
        "mcp: {servers: {time: {comand: python}}}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_settings(config, env={}, user_config=tmp_path / "none.yaml")
    text = str(err.value)
    where = f"project file {config}"
    assert f"{where}: chanels: unknown field (did you mean 'channels'?)" in text
    assert f"{where}: channels.telegram.tokn: unknown field (did you mean 'token'?)" in text
    assert f"{where}: routing.strategy: Input should be 'rule', 'llm' or 'hybrid' (did you mean 'hybrid'?)" in text
    assert f"{where}: mcp.servers.time.comand: unknown field (did you mean 'command'?)" in text


def test_relative_paths_follow_the_config_file_not_the_working_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        project / "config" / "bot.yaml",
        "store: {data_dir: data}\nmcp: {servers: {t: {command: python, cwd: tools}}}\n",
    )
    settings = load_settings(config, env={}, user_config=Path("none.yaml"))
    assert settings.store.data_dir == project / "data"
    assert settings.agents.dirs == [project / "config" / "agents"], "the default agent folder, of this project"
    assert settings.tools.workspace == project / "data" / "workspace"
    assert settings.mcp.servers["t"].cwd == project / "tools"
    assert settings.store.database_url() == f"sqlite:///{project / 'data' / 'bot.db'}"
    # A path given in the environment means what the shell means: the working directory's.
    moved = load_settings(config, env={"BOT_STORE__DATA_DIR": "mine"}, user_config=Path("none.yaml"))
    assert moved.store.data_dir == Path("mine")
    write(project / "config" / "bot.yaml", "store: {url: 'sqlite:///db/bot.db'}\n")
    assert load_settings(config, env={}).store.url == f"sqlite:///{project / 'db' / 'bot.db'}"
    # From the project folder itself nothing changes: the paths read as they are written.
    monkeypatch.chdir(project)
    assert load_settings(Path("config/bot.yaml"), env={}).store.data_dir == Path("data")


async def test_doctor_from_elsewhere_finds_the_projects_agent_files(project: Path) -> None:
    write(project / "config" / "bot.yaml", "bot: {name: helper}\n")
    write(project / "config" / "agents" / "cook.md", "---\nname: cook\ndescription: Recipes.\n---\nYou cook.\n")
    lines = await diagnose(project / "config" / "bot.yaml", timeout_s=5, env={})
    agents = next(line for line in lines if line.what.startswith("agents:"))
    assert agents.ok and agents.what.startswith("agents: 4 valid (1 from files;"), agents.what
    assert str(project / "config" / "agents") in agents.what


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("not-a-token", "is not a bot token"),
        ("123456:ABC def", "contains a space or a line break"),
        ("\"'123456:ABCdef'\"", "is wrapped in quotes"),  # YAML reads the outer quotes, the inner ones stay
    ],
)
def test_a_malformed_telegram_token_is_refused_before_aiogram_loads(tmp_path: Path, token: str, why: str) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import channels.registry\n"  # installs the channels (as the composition root does)
        "from bot.config.settings import ConfigError, load_settings\n"
        "try:\n"
        "    load_settings(None, env={'BOT_CHANNELS__TELEGRAM__ENABLED': 'true', 'BOT_CHANNELS__TELEGRAM__TOKEN': "
        "sys.argv[1]}, user_config=Path('none.yaml'))\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
        "print('aiogram loaded' if 'aiogram' in sys.modules else 'aiogram not loaded')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, token], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert f"channels.telegram.token {why}" in done.stdout, done.stdout + done.stderr
    assert "aiogram not loaded" in done.stdout
    assert token not in done.stdout.replace("channels.telegram.token", ""), "the token is never shown"
