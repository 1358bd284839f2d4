"""``bot eval`` as an operator runs it: a subprocess with a project config in a temp dir, its own temp dir
(``TMPDIR``) and an environment without the developer's model keys or ``BOT_*`` settings."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from bot.evals.runner import merged

KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY")


def operator_config(tmp_path: Path, **more: Any) -> Path:
    """The operator's ``bot.yaml``: data in ``tmp_path/data``, the built-in agents, routing by rule."""
    config = tmp_path / "bot.yaml"
    settings = {
        "store": {"data_dir": str(tmp_path / "data")},
        "agents": {"dirs": []},
        "memory": {"summary": {"model": "extractive"}},
        "routing": {"strategy": "rule", "rule": {"learned": False, "meaning": False}},
    }
    config.write_text(yaml.safe_dump(merged(settings, more)))
    return config


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("BOT_")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**env, "TMPDIR": str(tmp_path / "tmp"), **extra}


def command(tmp_path: Path, *args: str) -> list[str]:
    config = tmp_path / "bot.yaml"
    if not config.exists():
        operator_config(tmp_path)
    return [sys.executable, "-m", "bot", "eval", *args, "-c", str(config)]


def bot_eval(
    tmp_path: Path, *args: str, timeout: float = 180, memory: int | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``bot eval ARGS`` to its end (``timeout``: a ceiling no healthy run comes near; ``memory``: the most
    address space the process may take, in bytes)."""

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        command(tmp_path, *args),
        cwd=tmp_path,
        env=environment(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
    )


def leftovers(tmp_path: Path) -> list[str]:
    """The run folders left in the runs' temp dir."""
    return sorted(p.name for p in (tmp_path / "tmp").glob("bot-eval-*"))
