"""The dependency direction: agents imports neither bot nor channels; channels import only bot's contracts
(and no agents module at all); the settings import no channel; no import cycles anywhere, function-level imports
included; and package by package, the layers of the Architecture drawing in docs/architecture.md (:data:`LAYERS`):
no package cycle, no import up.  String imports count: ``import_module("a.b")``, ``__import__("a.b")`` and a
``"a.b:attr"`` string handed to a call are imports of ``a.b``, and a module name the check cannot read (a variable)
is refused."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
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
        # bot.retry and bot.limits (with bot.clock, their time port): the one retry helper and rate limiter.
        "allowed = {'bot', 'bot.events', 'bot.inbox', 'bot.errors', 'bot.media', 'bot.media.fetch',\n"
        "           'bot.config', 'bot.config.channels', 'bot.retry', 'bot.limits', 'bot.clock'}\n"
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


def _parsed(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per test process while the file is unchanged (most checks here read
    every module, some twice)."""
    return _parse(path, path.stat().st_mtime_ns)


@cache
def _parse(path: Path, _mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _imports(name: str, path: Path, modules: dict[str, Path], *, top_level: bool = False) -> set[str]:
    """The project modules ``name`` imports anywhere in its file: top level, in functions, under TYPE_CHECKING;
    with ``top_level``, only those run when the module is imported (not in functions, not under TYPE_CHECKING).

    ``from pkg import x`` is an import of ``pkg.x`` when that is a module, else of ``pkg``.  A package's
    ``__init__`` running first when one of its submodules is imported is not counted (that is not a cycle).
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str] = set()
    tree = _parsed(path)
    nodes = _run_at_import(tree) if top_level else list(ast.walk(tree))
    for node in nodes:
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
    found |= {m for literal in _string_imports(nodes)[0] if (m := known(literal))}
    found.discard(name)
    return found


IMPORTERS = {"import_module", "__import__"}
"""Functions that import the module named by their first argument (``importlib.import_module``, ``__import__``)."""
MODULE_ATTR = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")
"""A ``"pkg.mod:attr"`` reference, as loaders take them (entry points, ``module:factory`` plugin references)."""


def _string_imports(nodes: list[ast.AST]) -> tuple[set[str], list[str]]:
    """The modules ``nodes`` import by name (``import_module("a.b")``, ``to_thread(import_module, "a.b")``,
    ``__import__("a.b")``, and the module of a ``"a.b:attr"`` argument of any call), and the string imports whose
    module is not a literal (what no check can follow), as source lines."""
    found: set[str] = set()
    unread: list[str] = []

    def importer(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id in IMPORTERS) or (
            isinstance(node, ast.Attribute) and node.attr in IMPORTERS
        )

    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        if importer(node.func):
            named = node.args[0] if node.args else None
            if isinstance(named, ast.Constant) and isinstance(named.value, str):
                found.add(named.value)
            else:
                unread.append(ast.unparse(node))
        for at, arg in enumerate(node.args):  # to_thread(import_module, "a.b"), run_in_executor(None, ...)
            if importer(arg):
                named = node.args[at + 1] if at + 1 < len(node.args) else None
                if isinstance(named, ast.Constant) and isinstance(named.value, str):
                    found.add(named.value)
                else:
                    unread.append(ast.unparse(node))
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and MODULE_ATTR.fullmatch(arg.value):
                found.add(arg.value.partition(":")[0])
    return found, unread


def _run_at_import(tree: ast.AST) -> list[ast.AST]:
    """The nodes of ``tree`` that run when the module is imported: not function bodies, not ``if TYPE_CHECKING``."""
    found: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)
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


def test_the_checks_follow_string_imports(tmp_path: Path) -> None:
    source = tmp_path / "loader.py"
    source.write_text(
        "import asyncio, importlib\n"
        "from importlib import import_module\n"
        "import_module('bot.clock')\n"
        "def later(name):\n"
        "    importlib.import_module('bot.ids')\n"
        "    __import__('bot.retry')\n"
        "    asyncio.to_thread(import_module, 'bot.fencing')\n"
        "    Plugin('x', adapter='channels.telegram.adapter:build')\n"
        "    import_module(name)\n"
    )
    modules = {**_modules(), "loader": source}
    assert _imports("loader", source, modules) == {
        "bot.clock", "bot.ids", "bot.retry", "bot.fencing", "channels.telegram.adapter",
    }  # fmt: skip
    assert _imports("loader", source, modules, top_level=True) == {"bot.clock"}
    tree = ast.parse(source.read_text())
    assert _string_imports(list(ast.walk(tree)))[1] == ["import_module(name)"]


def test_no_string_import_the_checks_cannot_follow() -> None:
    """A module named by a variable (``import_module(PLUGIN_MODULE)``) hides an edge from every check here."""
    unread = {}
    for name, path in _modules().items():
        found = _string_imports(list(ast.walk(_parsed(path))))[1]
        if found:
            unread[name] = found
    assert unread == {}


def test_the_settings_load_no_channel() -> None:
    """The settings sit below the channels: importing them (or the media service) loads no ``channels`` module;
    the composition root installs the channels' sections (it imports ``channels.registry``)."""
    code = (
        "import sys\n"
        "import bot.config.settings, bot.media.service\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] == 'channels')\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if (n := len(path.read_text().splitlines())) > 500
    }
    assert long == {}


# The README's Architecture drawing, package by package (a package: ``bot.<name>`` for bot's subpackages and
# modules, ``channels.<name>``, ``agents``), top to bottom.  A package imports only from its own layer (without
# a cycle) or lower ones; channel adapters import only bot's ports and contracts and the layers below them, and
# only the composition root and the command line import them.
LAYERS: list[tuple[str, set[str]]] = [
    ("command line", {"bot.__main__", "bot.cli"}),
    ("composition root, supervisor, intake, channel start-up", {"bot.gateway"}),
    (
        "services",
        {
            "bot.commands", "bot.routing", "bot.interrupts", "bot.runs", "bot.tracing", "bot.jobs", "bot.memory",
            "bot.ops", "bot.pairing", "bot.scale", "bot.web", "bot.models", "bot.access", "bot.evals",
        },
    ),
    # bot.media: the download contract channels implement (bot.media.fetch) beside the media intake.
    (
        "ports and contracts",
        {
            "bot.events", "bot.inbox", "bot.delivery", "bot.bus", "bot.store", "bot.config", "bot.http",
            "bot.media", "bot.redaction",
        },
    ),
    (
        "basics",
        {
            "bot", "bot.errors", "bot.clock", "bot.ids", "bot.aio", "bot.fencing", "bot.defaults", "bot.retry",
            "bot.limits",
        },
    ),
    # Libraries that import nothing of bot: the agents, and the markdown rendering and splitting every channel
    # (and the streaming of a reply, for its previews) uses.
    ("libraries", {"agents", "channels.formatting"}),
]  # fmt: skip
CHANNEL_LAYER = "ports and contracts"
"""Channel adapters (``channels.*`` but formatting) sit beside the services: they import this layer and below."""
MAY_IMPORT_CHANNELS = {"bot.__main__", "bot.cli", "bot.gateway"}

ALLOWED_FOR_NOW: dict[tuple[str, str], str] = {}
"""Package edges against the drawing that another helper is removing now; the lead empties this at the end."""


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in ("bot", "channels") and len(parts) > 1 else parts[0]


def _layer(package: str) -> float:
    if package.startswith("channels.") and package != "channels.formatting":
        return next(i for i, (name, _) in enumerate(LAYERS) if name == CHANNEL_LAYER) - 0.5
    found = [i for i, (_, members) in enumerate(LAYERS) if package in members]
    assert found, (
        f"{package} is in no layer of the drawing: add it to LAYERS (and to the drawing in docs/architecture.md)"
    )
    return found[0]


def _package_graph(*, top_level: bool) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) package → the module imports behind it."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        for target in _imports(name, path, modules, top_level=top_level):
            a, b = _package(name), _package(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{name} -> {target}")
    return edges


def _against_the_drawing(a: str, b: str) -> bool:
    if b.startswith("channels.") and b != "channels.formatting" and not a.startswith("channels"):
        return a not in MAY_IMPORT_CHANNELS
    if a.startswith("channels.") and b.startswith("channels."):
        return b != "channels.formatting" and a == "channels.formatting"
    # Lower layers have higher numbers; the channels' is just above the layer they import.
    return _layer(b) < _layer(a)


def test_packages_follow_the_drawing() -> None:
    """Imports run when a module is imported (not in functions, not under TYPE_CHECKING), package by package."""
    edges = _package_graph(top_level=True)
    against = {
        edge: found[:3] for edge, found in edges.items() if _against_the_drawing(*edge) and edge not in ALLOWED_FOR_NOW
    }
    assert against == {}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if (a, b) not in ALLOWED_FOR_NOW:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    assert _cycles(graph) == []


def test_no_package_cycle_counting_every_import() -> None:
    """Imports in functions and under TYPE_CHECKING count too: a late import is still a dependency, and no
    package leans on one above it that way (``bot eval`` hands the Gateway class to the eval runner, for one)."""
    edges = _package_graph(top_level=False)
    against = {edge: found[:3] for edge, found in edges.items() if _against_the_drawing(*edge)}
    assert against == {}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    assert _cycles(graph) == []


def test_the_package_check_sees_an_import_up() -> None:
    assert _against_the_drawing("bot.config", "channels.registry")  # the settings below the channels
    assert _against_the_drawing("bot.media", "channels.registry")  # only the composition root imports channels
    assert _against_the_drawing("channels.telegram", "bot.runs")  # channels import contracts only
    assert _against_the_drawing("bot.store", "bot.jobs")
    assert not _against_the_drawing("channels.telegram", "bot.media")
    assert not _against_the_drawing("bot.gateway", "channels.registry")
    assert not _against_the_drawing("bot.runs", "channels.formatting")
    assert not _against_the_drawing("channels.registry", "channels.telegram")
    assert ("bot.cli", "bot.gateway") in _package_graph(top_level=False)
    assert ("bot.cli", "bot.gateway") not in _package_graph(top_level=True)  # bot run imports the gateway late
