"""The deploy files work as written (there is no Docker here, so they are read, not run): every bot process shares
one data volume; the compose file leaves the configuration to the mounted file (tests/deploy), the Kubernetes
ConfigMap passes every channel's access settings in a form the settings loader takes; the build context keeps
secrets and local state out; the image installs pinned versions of everything it needs."""

from __future__ import annotations

import re
import shlex
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from bot.config.settings import Settings, load_settings
from channels.registry import PLUGINS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHANNELS = sorted(name for name, plugin in PLUGINS.items() if plugin.init().asks_admin)
"""The platform channels (those with admins and access lists): each needs its access settings passed on."""
ACCESS = ("ENABLED", "ALLOW_FROM", "ADMINS")
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return data


def kubernetes() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / "k8s" / "bot.yaml").read_text()) if d]


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
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


def interpolate(environment: dict[str, Any], shell: dict[str, str]) -> dict[str, str]:
    """``${VAR:-default}`` as Compose fills it in from the shell (or the .env file)."""
    return {
        name: _VAR.sub(lambda m: shell.get(m.group(1)) or (m.group(2) or ""), str(value))
        for name, value in environment.items()
    }


def settings_in_container(env: dict[str, str], tmp_path: Path) -> Settings:
    """What a bot process started with ``env`` (the image's ENV below it) loads; an empty config file."""
    empty = tmp_path / "config" / "bot.yaml"
    empty.parent.mkdir(exist_ok=True)
    empty.write_text("")
    return load_settings(empty, env={**image_env(), **env}, user_config=tmp_path / "none.yaml")


# -- one data volume --------------------------------------------------------------------------------------------


def test_compose_gives_every_bot_process_the_one_data_volume(tmp_path: Path) -> None:
    services = compose()["services"]
    bots = {name: s for name, s in services.items() if s.get("command", [])[:2] == ["bot", "run"]}
    assert set(bots) == {"gateway", "worker"}
    mounts = {name: [v for v in s["volumes"] if not v.startswith(".")] for name, s in bots.items()}
    assert mounts == {"gateway": ["bot-data:/data"], "worker": ["bot-data:/data"]}
    assert set(compose()["volumes"]) == {"redis-data", "postgres-data", "bot-data"}
    # What the processes write goes to the data folder, <project>/data, which in the image (/app) is /data.
    settings = settings_in_container({}, tmp_path)
    assert settings.store.data_dir.resolve() == (tmp_path / "data").resolve()
    assert Path(settings.tools.workspace).is_relative_to(settings.store.data_dir)
    assert "ln -s /data /app/data" in " ".join(dockerfile()) and "WORKDIR /app" in dockerfile()


def test_kubernetes_pods_share_one_read_write_many_claim() -> None:
    docs = kubernetes()
    [claim] = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "pods on several nodes mount it at once"
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert len(deployments) == 2
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        [volume] = pod["volumes"]
        assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"]}
        [container] = pod["containers"]
        assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/data"}]
        assert pod["securityContext"]["fsGroup"] == 10001, "the image's user can write to the volume"
    assert "useradd --create-home --uid 10001 bot" in " ".join(dockerfile())


# -- every channel's access settings -----------------------------------------------------------------------------


def test_compose_sets_no_configuration_key() -> None:
    """Channels, access and everything else come from the mounted config file (tests/deploy/test_compose.py
    runs what `bot init --scale` writes); the compose file's environment is only the stack's database and bus."""
    environment = compose()["x-bot"]["environment"]
    assert set(environment) == {"DATABASE_URL", "REDIS_URL"}
    assert not [name for name in image_env() if name.startswith("BOT_STORE__")], "the data folder is the file's"


def test_kubernetes_config_map_sets_every_channels_access(tmp_path: Path) -> None:
    [config] = [d["data"] for d in kubernetes() if d["kind"] == "ConfigMap"]
    for channel in CHANNELS:
        for key in ACCESS:
            assert f"BOT_CHANNELS__{channel.upper()}__{key}" in config, (channel, key)
    settings = settings_in_container({**config, "TELEGRAM_BOT_TOKEN": "123456:ABC"}, tmp_path)
    assert [c for c in CHANNELS if settings.channels.section(c).enabled] == ["telegram"]


# -- the build context ------------------------------------------------------------------------------------------


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``path`` (relative to the context) out: the last matching rule decides, and a rule
    that matches a folder covers what is in it."""
    parts = path.split("/")
    ignored = False
    for pattern in patterns:
        keep = pattern.startswith("!")
        regex = _regex(pattern.removeprefix("!").strip("/"))
        if any(re.fullmatch(regex, "/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            ignored = not keep
    return ignored


def _regex(pattern: str) -> str:
    """A .dockerignore pattern as a regular expression: ``**/`` any folders, ``*`` a name's part, ``[...]`` kept."""
    wildcards = {"**/": "(.*/)?", "**": ".*", "*": "[^/]*"}
    tokens = re.findall(r"\*\*/|\*\*|\*|\[[^]]*\]|[^*[]+", pattern)
    return "".join(wildcards.get(t) or (t if t.startswith("[") else re.escape(t)) for t in tokens)


def test_dockerignore_keeps_secrets_and_local_state_out() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for secret in (".env", ".env.production", "deploy/.env", "config/.env", "certs/server.pem", "tls/bot.key"):
        assert _ignored(secret, patterns), secret
    for local in (".git/HEAD", ".venv/bin/python", "venv/lib/x.py", ".venv-ci/bin/pip", "data/bot.db", "bot.db-wal"):
        assert _ignored(local, patterns), local
    for noise in ("tests/conftest.py", ".artifacts/shot.png", "bot/__pycache__/x.pyc", ".mypy_cache/x", "bench/x.py"):
        assert _ignored(noise, patterns), noise
    # The repository's config and its example agents never reach an image (a project's config/ is mounted).
    for example in ("config/bot.yaml", "config/agents/debugger.md"):
        assert _ignored(example, patterns), example
    assert not _ignored("bot/config/settings.py", patterns) and not _ignored("bot/defaults/agents/chat.md", patterns)
    copied = [line.split()[1] for line in dockerfile() if line.startswith("COPY ")]
    assert copied, "the Dockerfile copies files"
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not _ignored(source, patterns), f"{source} is copied by the Dockerfile but left out of the context"
        if (ROOT / source).is_dir():
            for file in (ROOT / source).rglob("*.py"):
                relative = file.relative_to(ROOT).as_posix()
                assert "__pycache__" in relative or not _ignored(relative, patterns), relative


# -- pinned dependencies ----------------------------------------------------------------------------------------


def pins() -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in (DEPLOY / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and name.strip() == canonicalize_name(name), f"not a pin by canonical name: {line!r}"
        found[name.strip()] = Version(version.strip())
    return found


def runtime_requirements() -> list[Requirement]:
    """What the image installs: pyproject's dependencies and its ``scale`` extra (as the Dockerfile reads them)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["scale"]]]


def test_every_runtime_dependency_is_pinned_within_what_pyproject_allows() -> None:
    pinned = pins()
    requirements = runtime_requirements()
    assert {"asyncpg", "redis"} <= {canonicalize_name(r.name) for r in requirements}
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is not pinned in deploy/constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), f"{name}=={pinned[name]}: {requirement}"


def test_the_pins_cover_what_the_pinned_packages_require() -> None:
    """Walks the requirements of each pinned package whose pinned version is the installed one (the metadata of
    the others is not here): whatever they require is pinned too, within their specifiers."""
    pinned = pins()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = runtime_requirements()
    while todo:
        requirement = todo.pop()
        name, extras = canonicalize_name(requirement.name), frozenset(requirement.extras)
        assert name in pinned, f"{name} (required as {requirement}) is not pinned: python deploy/constraints.py"
        assert requirement.specifier.contains(pinned[name], prereleases=True), f"{name}=={pinned[name]}: {requirement}"
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        if Version(dist.version) != pinned[name]:
            continue
        for line in dist.requires or ():
            child = Requirement(line)
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in (*extras, "")):
                todo.append(child)


def test_the_image_installs_with_the_constraints_on_their_python() -> None:
    lines = dockerfile()
    base = lines[0].split()
    header = (DEPLOY / "constraints.txt").read_text().splitlines()[1]
    made_on = re.search(r"Python (\d+\.\d+)\.\d+", header)
    assert base[0] == "FROM" and made_on is not None and base[1] == f"python:{made_on.group(1)}-slim"
    assert "COPY deploy/constraints.txt ./deploy/" in lines
    [install] = [line for line in lines if "-r /tmp/requirements.txt" in line]
    assert "pip install -c deploy/constraints.txt -r /tmp/requirements.txt" in install
    assert "optional-dependencies']['scale']" in install
    readme = (ROOT / "docs" / "deploy" / "docker.md").read_text()
    assert (
        "python deploy/constraints.py" in readme
        and "python deploy/constraints.py" in (DEPLOY / "constraints.py").read_text()
    )
