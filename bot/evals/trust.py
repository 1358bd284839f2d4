"""What a suite may change of the operator's settings, and what only ``--trust-suite`` lets it change.

A suite may come from anyone, and its ``config`` (and each case's) goes over the operator's configuration for
its trials.  It may change how the bot behaves — routing, agents' settings, confirmations, plans, limits,
memory, which tools are on — but not where the bot sends things, with which credentials, or how far its tools
reach.  Without ``--trust-suite`` a run is refused before any model is called when a suite sets:

- anything of ``model`` (the provider and model that answer, the key, the base URL the key is sent to);
- a section that holds credentials or reaches outside: ``store``, ``bus``, ``http``, ``web``, ``channels``,
  ``mcp`` (a server is a command started on this machine), ``metrics``, ``budgets`` (the prices ``--budget``
  counts with) — only :data:`SECTIONS` may be set at all;
- anywhere: a secret (a key the settings or the redaction step treat as one: keys, tokens, passwords, headers,
  environments), a URL, endpoint or host, any ``sandbox``, the tools' ``workspace``, ``run_command``'s
  ``network`` and ``pass_env``, ``http_get``'s ``allow_private``, the OpenTelemetry exporter (``otel``);
- folders: ``agents.dirs`` or ``agents.user_dir`` (other than none), or a suite's ``agents:`` outside its folder.
- code: a Python check (``check: module:function``), which runs the suite's own code in this process.

With ``--trust-suite`` each of these is printed as a warning before the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from bot.config.secrets import SECRET_KEYS
from bot.errors import ConfigError
from bot.evals.pycheck import code_refs
from bot.evals.suite import Suite
from bot.redaction import Redaction

FLAG = "--trust-suite"

SECTIONS = frozenset(
    {
        "bot", "log", "limits", "runtime", "agents", "routing", "interrupts", "tools", "plan", "handoffs",
        "tracing", "media", "memory", "jobs", "pairing",
    }
)  # fmt: skip
"""The settings' sections a suite may set (keys in them still pass :func:`_key_reason`)."""

_WHY_SECTION = {
    "model": "the model that answers, its API key and the base URL the key is sent to",
    "store": "the store (its URL holds a password)",
    "bus": "the bus (its URL holds a password)",
    "http": "the HTTP server",
    "web": "the web console (its users and token)",
    "channels": "the platforms' tokens and secrets",
    "mcp": "MCP servers (each a command started on this machine, with its environment)",
    "metrics": "the metrics endpoint and its token",
    "budgets": "the budgets and the prices --budget counts with",
}
_URL = re.compile(r"(?:^|_)(?:url|urls|endpoint|endpoints|host|hosts|api_base|webhook)$")
_WHY_KEY = {
    "workspace": "the folder the tools work in (each trial has its own)",
    "network": "the network for sandboxed commands",
    "pass_env": "environment variables passed to commands (the operator's keys among them)",
    "allow_private": "private and local addresses http_get may reach",
    "otel": "where traces (with every message) are exported",
    "dirs": "folders of agent files read from this machine",
    "user_dir": "folders of agent files read from this machine",
}
_PLAIN = Redaction()


@dataclass(frozen=True)
class Guarded:
    """One setting a suite sets that needs ``--trust-suite``."""

    where: str
    """``config.model.base_url``, ``cases[2].config.tools.run_command.sandbox``, ``agents[0]``."""
    why: str
    value: Any = None
    secret: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {self.why}"

    def warning(self) -> str:
        shown = "‹not shown›" if self.secret else _PLAIN.text(repr(self.value))
        loud = " — commands run WITHOUT the sandbox the operator chose" if "sandbox" in self.where else ""
        return f"WARNING: {FLAG}: the suite sets {self.where} = {shown} ({self.why}){loud}"


class Refused(ConfigError):
    """A run that may not start (``bot eval`` exits 2 before any model is called)."""


class UntrustedSuite(Refused):
    """A suite that sets what only the operator may, run without ``--trust-suite``."""

    def __init__(self, source: str, found: list[Guarded]) -> None:
        self.found = found
        head = f"{source}: a suite may not set these unless you run it with {FLAG} (if you trust whoever wrote it):"
        super().__init__("\n  ".join([head, *(str(g) for g in found)]))


def guarded(suite: Suite, base_dir: Path) -> list[Guarded]:
    """Every setting of ``suite`` that needs ``--trust-suite`` (none: it may run as it is)."""
    found = list(_config("config", suite.config))
    for i, case in enumerate(suite.cases):
        found += _config(f"cases[{i}].config", case.config)
    for ref in code_refs(suite):  # a Python check runs the suite's code in this process
        why = f"Python code of the suite's folder ({ref.spec}), run in this process"
        found.append(Guarded(ref.path, why, ref.spec))
    root = base_dir.resolve()
    for i, folder in enumerate(suite.agents):
        pure = PurePath(folder)
        inside = not pure.is_absolute() and ".." not in pure.parts and (root / pure).resolve().is_relative_to(root)
        if not inside:
            found.append(Guarded(f"agents[{i}]", f"{folder!r} is outside the suite's folder", folder))
    return found


def _config(where: str, config: Mapping[str, Any]) -> Iterator[Guarded]:
    for section, value in config.items():
        if section not in SECTIONS:
            why = _WHY_SECTION.get(section, "a section a suite may not set")
            yield Guarded(f"{where}.{section}", why, value, secret=True)
        else:
            yield from _keys(f"{where}.{section}", value)


def _keys(where: str, value: Any) -> Iterator[Guarded]:
    if not isinstance(value, Mapping):
        return
    for key, inner in value.items():
        dotted = f"{where}.{key}"
        why, secret = _key_reason(str(key), inner)
        if why is not None:
            yield Guarded(dotted, why, inner, secret)
        else:
            yield from _keys(dotted, inner)


def _key_reason(key: str, value: Any) -> tuple[str | None, bool]:
    """Why a suite may not set ``key`` (None: it may), and whether its value may be a secret."""
    low = key.lower()
    if low in SECRET_KEYS or _PLAIN.key_kind(key) is not None:
        return "a secret", True
    if "sandbox" in low:
        return "the sandbox commands run in", False
    if _URL.search(low):
        return "an address the bot connects to", True
    if low in ("dirs", "user_dir") and value in ([], "", None):
        return None, False  # none: the built-in agents only
    if low in _WHY_KEY:
        return _WHY_KEY[low], False
    return None, False
