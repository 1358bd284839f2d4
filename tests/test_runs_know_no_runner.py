"""``bot/runs`` records and delivers: the run manager has no runner-specific code.

The agent loop starts, pauses and resumes runs (:meth:`agents.loop.AgentLoop.resume` finds how a paused run's
runner resumes, through :class:`agents.results.Resumable`); the manager only stores what the loop decided.
The loop's side is tested in ``tests/agents/test_loop.py`` for every runner kind.
"""

from __future__ import annotations

import ast
from pathlib import Path

import bot.runs.manager as manager
from agents.results import Resumable
from bot.config.settings import Settings
from bot.runs.runners import RUNNERS

RUNNER_MODULES = {"agents.react", "agents.plan_execute", "agents.chat", "agents.graph"}
RUNNER_MODULES_ALLOWED = {"agents.graph": {"GraphPosition"}}
"""What the manager may take from a runner's module: the graph position is a run's, not a runner's."""


def test_the_run_manager_has_no_runner_specific_code() -> None:
    tree = ast.parse(Path(manager.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in RUNNER_MODULES:
            names = {alias.name for alias in node.names}
            assert names <= RUNNER_MODULES_ALLOWED.get(node.module, set()), (node.module, names)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}:
            assert "runner" not in ast.unparse(node.args[0]), f"line {node.lineno}: {ast.unparse(node)}"
        if isinstance(node, ast.Attribute) and node.attr == "resume":
            assert "runner" not in ast.unparse(node.value), f"line {node.lineno}: resumed by the manager"
        if isinstance(node, ast.Name):
            assert not node.id.endswith("Runner"), f"line {node.lineno}: {node.id}"


def test_every_runner_kind_that_pauses_is_resumable() -> None:
    """The runners an agent file may name: every one but the graph (whose nodes' agents pause) resumes."""
    from agents.spec import AgentSpec

    settings = Settings()
    for kind in RUNNERS.values():
        spec = AgentSpec.model_validate(
            {"name": "x", "runner": kind.name, "prompt": "p"}
            | ({"graph": {"entry": "a", "nodes": {"a": "y"}, "edges": [{"from": "a", "to": "END"}]}}
               if kind.name == "graph" else {})
        )  # fmt: skip
        runner = kind.build(spec, settings.plan)
        assert isinstance(runner, Resumable) == (kind.name != "graph"), kind.name
