"""SQL lives in ``bot/store`` only: everything else reaches the tables through the repositories of
:mod:`bot.store.ports`. This scans every module of ``bot/`` outside ``bot/store`` for SQL and names each place
(file:line) it finds:

- SQL text: a string (or an f-string's literal part) that starts like a statement (``SELECT … FROM``, ``INSERT
  INTO``, ``UPDATE … SET``, ``DELETE FROM``, ``CREATE TABLE``, ``PRAGMA``…);
- database libraries: importing SQLAlchemy, SQLModel or a driver; calling SQLAlchemy's ``select``/``insert``/
  ``update``/``delete``/``text``, or a SQLModel session's ``.exec(``;
- the store's write steps built or run outside it: ``Step(…)`` from :mod:`bot.store.sql.ops`, and ``….store.read(``,
  ``….store.write(``, ``….store.write_later(`` (a repository method says what it does instead).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "bot"
STORE = BOT / "store"

STATEMENT = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|SELECT\s+\(|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+"
    r"(UNIQUE\s+)?(TABLE|INDEX|VIRTUAL\s+TABLE|TRIGGER)\s|DROP\s+(TABLE|INDEX)\s|ALTER\s+TABLE\s|PRAGMA\s+\w+|"
    r"WITH\s+\w+\s+AS\s*\(|VACUUM\b)",
    re.DOTALL,
)
SQL_LIBRARIES = ("sqlalchemy", "sqlmodel", "sqlite3", "asyncpg", "aiosqlite")
BUILDERS = frozenset({"select", "insert", "update", "delete", "text"})
STORE_CALLS = frozenset({"read", "write", "write_later"})


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        # The literal head of an f-string is what says "this is SQL" (f"SELECT {columns} FROM …").
        return ["".join(str(v.value) if isinstance(v, ast.Constant) else " x " for v in node.values)]
    return []


def _is_store(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "store") or (
        isinstance(node, ast.Attribute) and node.attr == "store"
    )


def sql_in(path: Path) -> list[str]:
    """The places in ``path`` that hold SQL, as ``file:line: what``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found: list[str] = []
    builders: set[str] = set()
    steps: set[str] = set()
    in_fstring: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            in_fstring |= {id(v) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] in SQL_LIBRARIES for m in modules):
                found.append(f"{where}:{node.lineno}: imports {', '.join(modules)}")
            if isinstance(node, ast.ImportFrom) and node.module == "bot.store.sql.ops":
                steps |= {a.asname or a.name for a in node.names if a.name == "Step"}
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("sqlalchemy", "sqlmodel"):
                builders |= {a.asname or a.name for a in node.names if a.name in BUILDERS}
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and (func.id in steps or func.id in builders):
                found.append(f"{where}:{node.lineno}: {func.id}(…)")
            elif isinstance(func, ast.Attribute) and func.attr == "exec":
                found.append(f"{where}:{node.lineno}: .{func.attr}(…)")
            elif isinstance(func, ast.Attribute) and func.attr in STORE_CALLS and _is_store(func.value):
                found.append(f"{where}:{node.lineno}: store.{func.attr}(…)")
        elif id(node) not in in_fstring:
            for text in _strings(node):
                if STATEMENT.match(text):
                    found.append(f"{where}:{getattr(node, 'lineno', 0)}: SQL {text.strip()[:60]!r}")
    return found


def test_no_sql_outside_the_store() -> None:
    found = [place for path in sorted(BOT.rglob("*.py")) if not path.is_relative_to(STORE) for place in sql_in(path)]
    assert not found, "SQL outside bot/store (move it into a repository of bot/store/ports.py):\n" + "\n".join(found)


def test_the_scan_finds_each_kind(tmp_path: Path) -> None:
    """The scanner itself: each construct it looks for, in a module of its own, is named with its line."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from sqlalchemy import select, text\n"
        "from bot.store.sql.ops import Step\n"
        'A = "SELECT id FROM runs WHERE chat_key = ?"\n'
        'B = f"UPDATE {table} SET value = ? WHERE id = ?"\n'
        "async def f(self, session, columns):\n"
        '    await self.store.read(f"SELECT {columns} FROM trace_events")\n'
        "    await session.exec(select(Run))\n"
        '    return Step("DELETE FROM inbox WHERE seq < ?", (1,)), text("PRAGMA wal_checkpoint(TRUNCATE)")\n'
        'NOT_SQL = "select a file, then update the settings"\n',
        encoding="utf-8",
    )
    lines = sorted({int(place.split(":")[1]) for place in sql_in(module)})
    assert lines == [1, 3, 4, 6, 7, 8]
