"""File agents for the benchmarks: the four example agents and up to 36 generated ones, written as agent files.

The same agents bench/routing.py measures (``tests/data/routing/dev/agents-examples`` and
:func:`bench.routing.generated_agents`, seeded): a name, a description, triggers (keywords, one bounded
pattern, a priority) and examples each, ``runner: chat``.  :func:`write_agents` writes them to a directory
(``agents.dirs``) and returns the messages to send: the agents' examples, so routing by meaning has to
choose among them.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import yaml

from bench.routing import AGENTS_DIR, DOMAINS, generated_agents
from bot.runs.catalog import RouteTarget

MAX_AGENTS = 4 + len(DOMAINS)


def _examples(path: Path) -> list[str]:
    front = path.read_text(encoding="utf-8").split("---")[1]
    return [str(e) for e in yaml.safe_load(front).get("examples", [])]


def _agent_file(target: RouteTarget) -> str:
    front = {
        "name": target.name,
        "title": target.title,
        "description": target.description,
        "runner": "chat",
        "triggers": {"keywords": list(target.keywords), "patterns": list(target.patterns), "priority": target.priority},
        "examples": list(target.examples),
    }
    body = f"You are the {target.title}. {target.description}\n"
    return f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n{body}"


def write_agents(directory: Path, count: int, seed: int = 7) -> list[str]:
    """``count`` (at most :data:`MAX_AGENTS`) agent files in ``directory``; their examples, to send as messages."""
    if not 0 < count <= MAX_AGENTS:
        raise ValueError(f"--agents: 1 to {MAX_AGENTS}")
    directory.mkdir(parents=True, exist_ok=True)
    texts: list[str] = []
    for example in sorted(AGENTS_DIR.glob("*.md"))[:count]:
        shutil.copy(example, directory / example.name)
        texts += _examples(example)
    for target in generated_agents(max(0, count - 4), random.Random(seed)):
        (directory / f"{target.name}.md").write_text(_agent_file(target), encoding="utf-8")
        texts += target.examples
    random.Random(seed).shuffle(texts)
    return texts
