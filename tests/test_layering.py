"""The dependency direction: agents imports neither bot nor channels; channels import only bot's contracts
(and no agents module at all); no import cycles anywhere, function-level imports included."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "channels", "agents")


def test_agents_does_not_load_bot_or_channels() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import agents\n"
        "for m in pkgutil.walk_packages(agents.__path__, 'agents.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('bot', 'channels'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_channels_import_only_bot_contracts() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import channels\n"
        "for m in pkgutil.walk_packages(channels.__path__, 'channels.'):\n"
        "    importlib.import_module(m.name)\n"
        # bot.config.channels: the settings' channel section every plugin extends and registers (a contract:
        # the settings sit below the channels, so the plugins add their sections rather than being imported).
        "allowed = {'bot', 'bot.events', 'bot.inbox', 'bot.errors', 'bot.media', 'bot.media.fetch',\n"
        "           'bot.config', 'bot.config.channels'}\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] == 'bot' and n not in allowed)\n"
        "bad += sorted(n for n in sys.modules if n.split('.')[0] == 'agents')\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file: top level, in functions, under TYPE_CHECKING.

    ``from pkg import x`` is an import of ``pkg.x`` when that is a module, else of ``pkg``.  A package's
    ``__init__`` running first when one of its submodules is imported is not counted (that is not a cycle).
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {m for a in node.names if (m := known(a.name))}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in modules else known(base)
                if target:
                    found.add(target)
    found.discard(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_function_level_imports() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    modules = _modules()
    # bot.gateway.parts imports most of what it needs at the top, and a few (tools, tool names) inside functions.
    assert "bot.runs.tool_names" in _imports("bot.gateway.parts", modules["bot.gateway.parts"], modules)


def test_no_module_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if (n := len(path.read_text().splitlines())) > 500
    }
    assert long == {}
