"""``bot init --scale`` writes a compose stack that runs with what init wrote (there is no Docker here: the files
are read and the bot's own settings loader is run on them as a container would): the config file is mounted where
the image's project folder is, every secret of ``.env.example`` reaches the gateway and the workers, and no
variable of the compose file or the image overrides a key the config file sets."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from dotenv import dotenv_values
from typer.testing import CliRunner

from bot.cli.deploy_files import COMPOSE_FILE, STACK_URLS, repository_compose
from bot.cli.main import app
from bot.config.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def dockerfile() -> list[str]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for line in dockerfile():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def workdir() -> str:
    [folder] = [line.split()[1] for line in dockerfile() if line.startswith("WORKDIR ")]
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project")
    args = ["init", "--scale", "--yes", "--channels", "telegram,slack", "--model", "openai"]
    args += ["--admin", "telegram:123456789", "--no-check", "--dir", str(folder)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"wrote {folder / COMPOSE_FILE}" in result.output and "docker compose up -d" in result.output
    assert "`bot service install`" in result.output
    return folder


def services(folder: Path) -> dict[str, dict[str, Any]]:
    """The bot services of the compose file, merge keys applied (as Compose does)."""
    data = yaml.safe_load((folder / COMPOSE_FILE).read_text())
    bots = {n: s for n, s in data["services"].items() if s.get("command", [])[:2] == ["bot", "run"]}
    assert set(bots) == {"gateway", "worker"}
    return bots


def interpolate(value: str, shell: dict[str, str]) -> str:
    return _VAR.sub(lambda m: shell.get(m.group(1)) or (m.group(2) or ""), value)


def test_the_stack_mounts_the_config_init_wrote_and_reads_its_env(project: Path) -> None:
    for name, service in services(project).items():
        binds = [v.split(":") for v in service["volumes"] if v.startswith((".", "/"))]
        assert binds == [["./config", f"{workdir()}/config", "ro"]], name
        # The bot in the container finds config/bot.yaml in its working directory: the image's project folder.
        assert (project / binds[0][0] / "bot.yaml").is_file()
        assert [project / f for f in service["env_file"]] == [project / ".env"], name
        assert (project / ".env.example").is_file()
    # The image ships none of the repository's config (nor its example agents): what is mounted is all there is.
    copied = [line.split()[1] for line in dockerfile() if line.startswith("COPY ")]
    assert not any(source.startswith("config") for source in copied), copied
    assert "config" in (ROOT / ".dockerignore").read_text().splitlines()


def test_every_secret_init_names_reaches_the_gateway_and_the_workers(project: Path) -> None:
    names = list(dotenv_values(project / ".env.example"))
    assert {"OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"} <= set(names)
    for name, service in services(project).items():
        # All of .env arrives (env_file); the only variables set here are the stack's own database and bus,
        # never a secret emptied by a default.
        assert set(service["environment"]) == set(STACK_URLS), name
        for variable, value in service["environment"].items():
            assert interpolate(str(value), {}).split("://")[1], (name, variable)


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def test_no_variable_overrides_what_the_config_file_sets(project: Path, tmp_path: Path) -> None:
    config = yaml.safe_load((project / "config" / "bot.yaml").read_text())
    written = _flatten(config)
    for name, service in services(project).items():
        env = {**image_env(), **service["environment"]}
        for variable, value in env.items():
            if not variable.startswith("BOT_"):
                continue
            dotted = variable.removeprefix("BOT_").lower().replace("__", ".")
            if dotted in written:
                assert yaml.safe_load(str(value)) == written[dotted], f"{name}: {variable} overrides {dotted}"
    # What a container loads: the mounted file in the image's project folder, the image's variables, .env's
    # secrets and the compose file's: every channel init enabled is on, with the admin init was given.
    app_dir = tmp_path / "app"
    shutil.copytree(project / "config", app_dir / "config")
    secrets = {
        "OPENAI_API_KEY": "sk-test",
        "TELEGRAM_BOT_TOKEN": "123456:ABCdefGHIjklMNOpqrSTUvwxYZ012345678",
        "SLACK_BOT_TOKEN": "xoxb-1-2-abc",
        "SLACK_APP_TOKEN": "xapp-1-A1-2-abc",
        "DATABASE_URL": "postgresql://bot:pw@127.0.0.1:5432/bot",  # .env's, for `bot run` on the host
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    stack = {k: interpolate(str(v), {}) for k, v in services(project)["gateway"]["environment"].items()}
    env = {**image_env(), **secrets, **stack}
    settings = load_settings(app_dir / "config" / "bot.yaml", env=env, user_config=tmp_path / "none.yaml")
    assert settings.channels.enabled() == ["telegram", "slack"]
    assert settings.channels.section("telegram").admins == ["123456789"]
    assert settings.model.provider == "openai"
    assert settings.store.url == "postgresql://bot:bot@postgres:5432/bot"
    assert settings.bus.url == "redis://redis:6379/0"
    # The data folder is <project>/data: in the image /app/data, the /data volume every bot container shares.
    assert settings.store.data_dir.resolve() == (app_dir / "data").resolve()
    assert "ln -s /data /app/data" in " ".join(dockerfile()) and workdir() == "/app"
    assert all(v.split(":")[1] == "/data" for s in services(project).values() for v in s["volumes"][1:])


def test_the_image_is_built_from_this_clone(project: Path) -> None:
    [build] = {str(s["build"]["context"]) for s in services(project).values()}
    assert (project / build / "Dockerfile").is_file() and Path(build).resolve() == ROOT


def test_the_repositorys_compose_file_is_the_same_stack() -> None:
    assert (ROOT / "deploy" / "docker-compose.yml").read_text() == repository_compose()
    data = yaml.safe_load(repository_compose())
    gateway = data["services"]["gateway"]
    assert gateway["volumes"][0] == "../config:/app/config:ro" and gateway["env_file"] == ["../.env"]
    assert (ROOT / "deploy" / gateway["build"]["context"] / "Dockerfile").is_file()


def test_kubernetes_says_how_to_get_the_first_admin() -> None:
    text = (ROOT / "deploy" / "k8s" / "bot.yaml").read_text()
    assert "kubectl exec deploy/bot-gateway -- bot pair approve CODE --admin" in text
    lines = text.splitlines()
    admins = next(n for n, line in enumerate(lines) if "BOT_CHANNELS__TELEGRAM__ADMINS" in line)
    assert "first admin" in lines[admins - 2], "the admins key says what it is for"
