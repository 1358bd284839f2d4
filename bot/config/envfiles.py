"""``.env`` files: a project's secrets and settings kept beside it.

A project keeps its secrets in a ``.env`` file (``bot init`` writes ``.env.example`` beside ``config/``). The bot
reads, in this order, the ``.env`` in the config file's folder, the one in its project folder
(:func:`~bot.config.paths.project_dir`), then the one in the working directory; the first file that sets a
variable wins, and the real environment wins over every file (as python-dotenv's ``override=False``). The
values go into the settings only, never into ``os.environ``: a child process (an MCP server, a command) does not
inherit them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values

from bot.config.paths import project_dir

ENV_FILE = ".env"


def candidates(config: Path | None) -> list[Path]:
    """The ``.env`` files looked for, first wins: beside ``config``, in its project folder, in the working directory."""
    found: list[Path] = []
    if config is not None:
        found += [config.absolute().parent / ENV_FILE, project_dir(config) / ENV_FILE]
    found.append(Path.cwd() / ENV_FILE)
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


@dataclass(frozen=True)
class EnvFiles:
    """What the ``.env`` files gave: the merged values (first file wins), where they were looked for, which existed."""

    values: dict[str, str] = field(default_factory=dict)
    looked: tuple[Path, ...] = ()
    read: tuple[Path, ...] = ()

    def where(self) -> str:
        """For an error about a variable: which ``.env`` files were read, or where none was found."""
        if self.read:
            return "read " + ", ".join(map(str, self.read))
        return "none found; looked for " + " and ".join(map(str, self.looked))


def read_env_files(config: Path | None) -> EnvFiles:
    """The ``.env`` files for the project file ``config`` (None: only the working directory's)."""
    values: dict[str, str] = {}
    looked = candidates(config)
    read: list[Path] = []
    for path in looked:
        if not path.is_file():
            continue
        read.append(path)
        for name, value in dotenv_values(path, interpolate=True).items():
            if value is not None:
                values.setdefault(name, value)
    return EnvFiles(values, tuple(looked), tuple(read))


def with_env_files(config: Path | None, environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], EnvFiles]:
    """The environment the settings read: the ``.env`` files' values under ``environ`` (default ``os.environ``)."""
    files = read_env_files(config)
    real = os.environ if environ is None else environ
    return {**files.values, **real}, files
