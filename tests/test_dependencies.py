"""What the code imports is declared in pyproject.toml, and what is declared is imported."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {"bot", "channels", "agents", "tests"}
USED_WITHOUT_IMPORT = {"aiosqlite", "sqlalchemy"}
"""Declared for what they do, not imported by name: the SQLite driver SQLAlchemy loads for migrations."""


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for package in ("bot", "channels", "agents"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    return found - OURS - set(sys.stdlib_module_names)


def test_every_import_is_declared_and_every_declaration_is_used() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_name(r) for r in project["dependencies"]}
    optional = {_name(r) for group in ("postgres", "otel", "scale") for r in project["optional-dependencies"][group]}
    distributions = {k: [d.lower().replace("_", "-") for d in v] for k, v in packages_distributions().items()}
    imported: set[str] = set()
    undeclared = []
    for module in _imported_modules():
        names = set(distributions.get(module) or ())
        assert names, f"{module} is imported but no installed distribution provides it"
        known = names & (declared | optional)  # "google" comes from several distributions: one declared is enough
        if known:
            imported |= known
        elif not module.startswith("opentelemetry"):
            undeclared.append(f"{module} ({', '.join(sorted(names))})")
    assert undeclared == [], f"imported but not declared in pyproject.toml: {undeclared}"
    unused = sorted(declared - imported - USED_WITHOUT_IMPORT)
    assert unused == [], f"declared but never imported: {unused}"


def test_no_private_module_of_a_dependency_is_imported() -> None:
    private = []
    for package in ("bot", "channels", "agents"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                modules = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                    else []
                )
                for module in modules:
                    top = module.split(".")[0]
                    if top not in OURS and top != "re" and any(p.startswith("_") for p in module.split(".")[1:]):
                        private.append(f"{path.relative_to(ROOT)}: {module}")
    assert private == [], private
