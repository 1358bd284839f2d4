"""The layers' raw data: a YAML file read as a mapping, the environment's ``BOT_<SECTION>__<KEY>`` variables and
shorthands as nested mappings, and the merge that remembers which layer set each key."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from agents import yaml_safe
from bot.errors import ConfigError

ENV_PREFIX = "BOT_"
ENV_SHORTHANDS: dict[str, tuple[str, ...]] = {
    "GEMINI_API_KEY": ("model", "providers", "gemini", "api_key"),
    "GEMINI_BASE_URL": ("model", "providers", "gemini", "base_url"),
    "OPENAI_API_KEY": ("model", "providers", "openai", "api_key"),
    "OPENAI_BASE_URL": ("model", "providers", "openai", "base_url"),
    "DATABASE_URL": ("store", "url"),
    "REDIS_URL": ("bus", "url"),
}


def merge(base: dict[str, Any], top: Mapping[str, Any], layer: str, origins: dict[str, str], prefix: str = "") -> None:
    for key, value in top.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge(base[key], value, layer, origins, dotted + ".")
        else:
            base[key] = value.copy() if isinstance(value, dict) else value
            for existing in [o for o in origins if o.startswith(dotted + ".")]:
                del origins[existing]
            origins[dotted] = layer


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml_safe.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_problem(path, exc)) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data


def yaml_problem(path: Path, exc: yaml.YAMLError) -> str:
    """``config/bot.yaml, line 3: invalid YAML: …`` with the parser's excerpt naming the file (not the
    ``<unicode string>`` it was given)."""
    where = ""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        where = f", line {exc.problem_mark.line + 1}"
    # The marks name their source: libyaml's (C) marks cannot be renamed, so the text is.
    shown = str(exc).replace('"<unicode string>"', f'"{path}"').replace("<unicode string>", str(path))
    return f"{path}{where}: invalid YAML: {shown}"


def env_layers(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """``BOT_A__B__C=v`` → ``{"a": {"b": {"c": v}}}``, one layer per variable."""
    layers: dict[str, dict[str, Any]] = {}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(parts):
            continue
        raw = env[name]
        try:
            value = yaml_safe.load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        nested: dict[str, Any] = {}
        cursor = nested
        for part in parts[:-1]:
            cursor = cursor.setdefault(part, {})
        cursor[parts[-1]] = value
        layers[f"env {name}"] = nested
    for name, path in ENV_SHORTHANDS.items():
        if env.get(name):
            shorthand: Any = env[name]
            for part in reversed(path):
                shorthand = {part: shorthand}
            layers[f"env {name}"] = shorthand
    return layers
