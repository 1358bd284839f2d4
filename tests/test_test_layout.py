"""The tests' own layout: a test module imports shared helpers from tests/helpers (or tests/fakes, tests/waiting.py,
a conftest), never from another ``test_*`` module, at the top or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def test_no_test_module_imports_another() -> None:
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path))):
            parts = module.split(".")
            if parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:]):
                bad.append(f"{path.relative_to(TESTS.parent)}:{line}: {module}")
    assert bad == [], "move what is shared into tests/helpers:\n" + "\n".join(bad)


def test_the_rule_sees_an_import_from_a_test_module() -> None:
    tree = ast.parse("def f():\n    from tests.bot.test_x import helper\n")
    assert [m for _, m in _imported_modules(tree) if "test_x" in m] == ["tests.bot.test_x", "tests.bot.test_x.helper"]
