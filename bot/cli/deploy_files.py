"""What ``bot init --scale`` writes for Docker Compose, beside ``config/bot.yaml`` and ``.env.example``.

The stack runs **what init wrote**: the project's ``config/`` (``bot.yaml`` and the agent files in
``config/agents``) is mounted read-only at ``/app/config``, the containers' project folder, and every line of the
project's ``.env`` reaches the bot containers (``env_file``). The compose file sets no configuration key: the
config file is the one source of truth, the environment carries only secrets, plus ``DATABASE_URL`` and
``REDIS_URL`` pointed at the stack's own PostgreSQL and Redis. The image (``Dockerfile``) ships no config and no
example agents; its data folder ``/app/data`` (``data_dir: data`` of the file init writes) is the ``/data``
volume every bot container shares.

``deploy/docker-compose.yml`` is the same file for the repository's own folder (rendered by :func:`render_compose`
with ``..`` paths; a test keeps the two equal).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

COMPOSE_FILE = Path("compose.yaml")
"""Where ``bot init --scale`` puts the compose file: the project folder, where ``docker compose`` finds it."""
IMAGE = "supervisor-bot"
"""The image's name: what ``docker build -t supervisor-bot .`` (docs/deploy/docker.md), compose and Kubernetes use."""
STACK_URLS = {
    "DATABASE_URL": "postgresql://bot:${POSTGRES_PASSWORD:-bot}@postgres:5432/bot",
    "REDIS_URL": "redis://redis:6379/0",
}
"""The only variables the compose file sets: the stack's own services (.env's values are for this machine)."""


class InitChoices(Protocol):
    """What of ``bot init``'s choices the deploy files depend on (:class:`bot.cli.init.Choices`)."""

    @property
    def scale(self) -> bool: ...

    @property
    def channels(self) -> list[str]: ...


@dataclass
class DeployFiles:
    files: dict[Path, str] = field(default_factory=dict)
    """Path relative to the project folder → its text."""
    next: list[str] = field(default_factory=list)
    """Lines for init to print after it wrote them."""


def source_checkout() -> Path | None:
    """The clone this bot was installed from (the image's build context), or None when it is not known.

    An editable install (or running from the clone) has the package inside it; ``pip install .`` from a clone
    records the folder in the distribution's ``direct_url.json`` (PEP 610). Either counts only when that folder
    still holds the ``Dockerfile``.
    """
    import bot

    candidates = [Path(bot.__file__).resolve().parent.parent]
    try:
        recorded = distribution("supervisor-bot").read_text("direct_url.json")
    except PackageNotFoundError:
        recorded = None
    if recorded:
        url = str(json.loads(recorded).get("url", ""))
        if url.startswith("file://"):
            candidates.append(Path(unquote(urlparse(url).path)))
    for folder in candidates:
        if (folder / "Dockerfile").is_file() and (folder / "pyproject.toml").is_file():
            return folder
    return None


STACK = """
x-bot: &bot
@IMAGE@
  restart: unless-stopped
  depends_on:
    redis: {condition: service_healthy}
    postgres: {condition: service_healthy}
  # Every line of the project's .env (tokens, model keys) reaches the bot containers.
  env_file: [@ENV_FILE@]
  environment:
    # The stack's own PostgreSQL and Redis (config/bot.yaml names them: ${DATABASE_URL}, ${REDIS_URL}).
@URLS@
  volumes:
    # The project's config (bot.yaml, agents/), read-only: what `bot init` wrote is what runs.
    - @CONFIG@
    # One data folder for every bot process, at the same path (/app/data in the image is /data): a
    # file a worker writes there (send_file's copy, a downloaded photo, the tools' workspace) is read
    # by the gateway that sends it and by whichever worker owns the chat next.
    - bot-data:/data

services:
  redis:
    image: redis:7
    # AOF fsynced every second: what the bus holds survives a Redis restart (at most ~1 s of stream
    # writes could go; the inbox rows in PostgreSQL are republished by the gateway's sweep).
    command: ["redis-server", "--appendonly", "yes", "--appendfsync", "everysec"]
    volumes: [redis-data:/data]
    healthcheck: {test: ["CMD", "redis-cli", "ping"], interval: 5s, timeout: 3s, retries: 20}

  postgres:
    image: postgres:16
    environment:
      POSTGRES_USER: bot
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-bot}  # set POSTGRES_PASSWORD in .env to change it
      POSTGRES_DB: bot
    volumes: [postgres-data:/var/lib/postgresql/data]
    healthcheck: {test: ["CMD-SHELL", "pg_isready -U bot -d bot"], interval: 5s, timeout: 3s, retries: 20}

  gateway:
    <<: *bot
    command: ["bot", "run", "--role", "gateway"]
    ports: ["8080:8080"]  # webhooks, /healthz, /readyz, /metrics

  worker:
    <<: *bot
    command: ["bot", "run", "--role", "worker"]
    deploy: {replicas: 2}

volumes:
  redis-data:
  postgres-data:
  # The bot's data folder, shared by the gateway and every worker (a local volume: one host; for
  # several hosts use a volume driver for shared storage, e.g. NFS).
  bot-data:
"""
"""The stack; ``@NAME@`` are filled in by :func:`render_compose`."""


def render_compose(*, project: str, build: str | None, header: list[str]) -> str:
    """The compose file: ``project`` is the project folder relative to the compose file (``.`` or ``..``),
    ``build`` the image's build context (None: the image is built beforehand)."""
    base = project.rstrip("/") + "/"  # ./config: a bind mount (a bare `config` would name a volume)
    image = [f"  image: {IMAGE}"]
    if build is None:
        image += ["  pull_policy: never  # built beforehand: docker build -t supervisor-bot <the clone>"]
    else:
        image += [f"  build: {{context: {_quoted(build)}}}"]
    fill = {
        "@IMAGE@": "\n".join(image),
        "@ENV_FILE@": _quoted(base + ".env"),
        "@URLS@": "\n".join(f"    {name}: {value}" for name, value in STACK_URLS.items()),
        "@CONFIG@": _quoted(base + "config:/app/config:ro"),
    }
    text = STACK
    for marker, value in fill.items():
        text = text.replace(marker, value)
    return "\n".join(f"# {line}".rstrip() for line in header) + "\n" + text


def _quoted(text: str) -> str:
    """A YAML scalar for a path: plain when that reads back as the same string, else double-quoted."""
    plain = re.fullmatch(r"[\w/.:@+-]+", text) is not None and not text.startswith("-") and not text.endswith(":")
    return text if plain else json.dumps(text)


def _how(compose: str) -> list[str]:
    """The header's instructions, ``compose`` being the command that finds the file."""
    return [
        f"  {compose} up -d                     # builds the image, starts everything",
        f"  {compose} up -d --scale worker=4    # more workers",
        f'  {compose} logs -f gateway           # "channel telegram: ready"',
        f"  {compose} exec gateway bot doctor   # the setup, checked from inside",
        f"  {compose} exec gateway bot pair approve CODE --admin   # the first admin, from a pairing code",
        "What runs is what `bot init` wrote: config/ (bot.yaml, and agent files in config/agents) is mounted",
        "read-only at /app/config, the containers' project folder; after editing it, restart gateway and worker.",
        "Secrets: every line of the project's .env (beside config/) reaches the bot containers; copy .env.example",
        "to .env and fill it in. Nothing here sets a configuration key, so config/bot.yaml is the one source of",
        "truth; DATABASE_URL and REDIS_URL are set to this stack's services (.env's are for `bot run` on this",
        "machine). The image turns the console off and serves HTTP on 0.0.0.0:8080 (/healthz, /readyz, /metrics).",
    ]


def project_compose(build: Path | None) -> str:
    """The compose file ``bot init --scale`` writes into a project (``build``: the clone, if known)."""
    header = [
        "Written by `bot init --scale`: the bot scaled out on one machine. Redis (the bus), PostgreSQL (shared",
        "state), one gateway (the platform connections) and workers (the supervisor and agents). In this folder:",
        *_how("docker compose"),
    ]
    return render_compose(project=".", build=None if build is None else str(build), header=header)


def repository_compose() -> str:
    """``deploy/docker-compose.yml``: the same stack, for the repository's own folder as the project."""
    header = [
        "The bot scaled out on one machine, for this repository's own folder (its config/, the example agents",
        "included, and its .env): `bot init --scale` writes the same file as compose.yaml into your project; use",
        "that one. Redis (the bus), PostgreSQL, one gateway and workers. From the repository's root:",
        *_how("docker compose -f deploy/docker-compose.yml"),
    ]
    return render_compose(project="..", build="..", header=header)


def deploy_files(choices: InitChoices, directory: Path) -> DeployFiles:
    """The files ``bot init`` writes for deployment (relative to ``directory``) and the lines it prints then."""
    out = DeployFiles()
    if choices.scale:
        clone = source_checkout()
        out.files[COMPOSE_FILE] = project_compose(clone)
        where = "" if directory == Path(".") else f"cd {directory} && "
        out.next.append(
            f"docker compose: {where}`docker compose up -d` runs this project scaled out ({COMPOSE_FILE}: Redis, "
            "PostgreSQL, a gateway, two workers), with config/ mounted and the secrets of .env (not .env.example)"
        )
        if clone is None:
            out.next.append(f"  build the image first, from the clone: docker build -t {IMAGE} /path/to/supervisor-bot")
    if any(channel != "console" for channel in choices.channels):  # the console needs a terminal, not a service
        out.next.append(
            "to keep it running on this machine: `bot service install` writes a systemd user unit for this project"
        )
    return out


def write_deploy_files(choices: InitChoices, directory: Path, *, force: bool) -> list[str]:
    """Write :func:`deploy_files` under ``directory`` (an existing file only with ``force``); the lines to print."""
    planned = deploy_files(choices, directory)
    lines: list[str] = []
    for relative, text in planned.files.items():
        path = directory / relative
        if path.exists() and not force:
            lines.append(f"kept {path} (it exists; --force overwrites it)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        lines.append(f"wrote {path}")
    return lines + planned.next
