"""The store as ports: outside ``bot/store`` and the composition root nothing imports a concrete store class or a
SQL ``Step`` (services are typed on :mod:`bot.store.ports`), and the ports with their values sit at the bottom of
the store (they import no implementation)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PORTS = {
    "bot.store.ports", "bot.store.run_ports", "bot.store.console_ports", "bot.store.bundle", "bot.store.base",
    "bot.store.values", "bot.store.rows", "bot.store.chat_state",
}  # fmt: skip
"""The Protocols and the values they speak in."""
HELPERS = {
    "bot.store.retry": "waiting out a database that cannot take a write now (no store class)",
    "bot.store.fulltext": "the text rules memory search uses (how words are cut), no store class",
    "bot.store.sql.migrate": "the schema's upgrade: `bot doctor` and the eval runner migrate a fresh database",
    "bot.store.sql.repos.eval_answers": "the eval response cache, a file of its own (not the bot's database)",
}
COMPOSITION_ROOT = ("bot.gateway.app", "bot.gateway.parts", "bot.cli", "bot.__main__")
"""Only these build the SQL store and its repositories (and may name them)."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _store_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``bot.store`` import in the file, at any depth (functions, TYPE_CHECKING)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[:2] == ["bot", "store"]:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "*") for a in node.names if a.name.split(".")[:2] == ["bot", "store"]]
    return found


def _outside_the_store() -> dict[str, Path]:
    found = {}
    for package in ("bot", "channels", "agents"):
        for path in (ROOT / package).rglob("*.py"):
            name = _module(path)
            if name == "bot.store" or name.startswith("bot.store."):
                continue
            if any(name == root or name.startswith(root + ".") for root in COMPOSITION_ROOT):
                continue
            found[name] = path
    return found


def test_services_import_ports_not_implementations() -> None:
    bad = {
        name: sorted(f"{module}.{imported}" for module, imported in imports if module not in PORTS | set(HELPERS))
        for name, path in _outside_the_store().items()
        if (imports := _store_imports(path))
    }
    assert {name: found for name, found in bad.items() if found} == {}


def test_no_sql_step_outside_the_store() -> None:
    """``Step`` by name too (re-exported or imported from anywhere): callers hand back opaque ``Change`` values."""
    bad = sorted(name for name, path in _outside_the_store().items() if "Step" in {n for _m, n in _store_imports(path)})
    assert bad == []


def test_the_ports_import_no_implementation() -> None:
    bad = {}
    for name in sorted(PORTS):
        path = ROOT / (name.replace(".", "/") + ".py")
        found = sorted(m for m, _ in _store_imports(path) if m not in PORTS)
        if found:
            bad[name] = found
    assert bad == {}


def test_the_check_sees_a_concrete_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bot.store.sql.repos.runs import RunStore\n"
        "def f():\n    from bot.store.sql.ops import Step\n"
    )
    assert _store_imports(sample) == [("bot.store.sql.repos.runs", "RunStore"), ("bot.store.sql.ops", "Step")]
