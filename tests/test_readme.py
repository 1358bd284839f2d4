"""The README and the manual tell the truth: every configuration key the reference names exists, their YAML examples
load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config.settings import builtin_defaults_path, load_settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "docs" / "configuration.md"
"""The configuration reference: its table of sections and keys (it was the README's)."""
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_ROW = re.compile(r"^\| `([a-z_.<>]+)` \| (.+) \|$")
_KEY = re.compile(r"`([a-z_]+(?:\.(?:[a-z_]+|\{[a-z_,]+\}))*)`")


def _outside_parentheses(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def _expand(key: str) -> list[str]:
    match = re.search(r"\{([a-z_,]+)\}", key)
    if match is None:
        return [key]
    return [k for part in match.group(1).split(",") for k in _expand(key[: match.start()] + part + key[match.end() :])]


def readme_keys() -> list[str]:
    keys = []
    for line in README.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row is None or row.group(1) == "section":
            continue
        section = row.group(1)
        for key in _KEY.findall(_outside_parentheses(row.group(2).split(": see")[0])):
            for dotted in _expand(key):
                keys.append(f"{section}.{dotted}")
    return keys


def _has(data: Any, dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[0] == "channels" and parts[1] == "<name>":
        return all(_has(data, ".".join(["channels", name, *parts[2:]])) for name in data["channels"])
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def test_every_key_the_readme_names_is_in_the_defaults() -> None:
    defaults = yaml.safe_load(builtin_defaults_path().read_text(encoding="utf-8"))
    keys = readme_keys()
    assert len(keys) > 60, keys
    missing = [k for k in keys if not _has(defaults, k)]
    assert missing == [], f"README names keys bot/defaults/bot.yaml does not have: {missing}"


def yaml_examples() -> list[str]:
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    return [b for b in blocks if re.match(r"^\s*(channels|mcp|store|tools|routing|limits):", b)]


@pytest.mark.parametrize("block", yaml_examples())
def test_the_readmes_configuration_examples_load(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "bot.yaml"
    config.write_text(block, encoding="utf-8")
    names = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", block))
    env = {name: f"{name.lower()}-value-0123456789" for name in names}
    env["TELEGRAM_BOT_TOKEN"] = "123456:ABCdef_test-token"
    shapes = {"SLACK_BOT_TOKEN": "xoxb-1-2-abc", "SLACK_APP_TOKEN": "xapp-1-A2-3-abc",
              "SLACK_SIGNING_SECRET": "0123456789abcdef" * 2, "DISCORD_BOT_TOKEN": "ZGlz.readme.token"}  # fmt: skip
    env.update({name: value for name, value in shapes.items() if name in env})  # each secret in its shape
    load_settings(config, env=env, user_config=tmp_path / "none.yaml")


def test_the_readme_has_yaml_examples_to_check() -> None:
    assert len(yaml_examples()) >= 3
