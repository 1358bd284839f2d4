"""Tests never wait for a fixed time: no ``sleep`` longer than 50 ms outside the fake servers.

A test waits for what it expects (``tests.waiting.eventually``), drives a ``FakeClock`` past a deadline, or
polls an outside process's readiness in short steps.  A fixed sleep either wastes time on an idle machine or
is too short on a busy one.  A fake platform may pace what it sends (people write at a pace), and a polling
helper sleeps between looks: such a line says so with ``# fake platform`` or ``# polls``.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LONGEST_S = 0.05
MARKS = ("# fake platform", "# polls")


def _constants(tree: ast.Module) -> dict[str, float]:
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, int | float) and not isinstance(value, bool):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = float(value)
    return found


def _long_sleeps(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, str(path))
    constants = _constants(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        real = (
            isinstance(func, ast.Attribute)
            and func.attr == "sleep"
            and isinstance(func.value, ast.Name)
            and func.value.id in ("asyncio", "time", "timing")
        )
        if not (real or (isinstance(func, ast.Name) and func.id == "sleep")):
            continue  # a FakeClock's sleep takes no time
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int | float):
            seconds: float | None = float(arg.value)
        elif isinstance(arg, ast.Name):
            seconds = constants.get(arg.id)
        else:
            seconds = None  # computed: only a marked line may do that
        if seconds is not None and seconds <= LONGEST_S:
            continue
        if any(mark in lines[node.lineno - 1] for mark in MARKS):
            continue
        found.append((node.lineno, f"{path.relative_to(TESTS.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}"))
    return [line for _, line in sorted(found)]


def test_no_test_sleeps_longer_than_50_ms() -> None:
    offenders = [
        line
        for path in sorted(TESTS.rglob("*.py"))
        if "fakes" not in path.relative_to(TESTS).parts
        for line in _long_sleeps(path)
    ]
    assert offenders == []


def test_the_check_sees_constants_and_names(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import asyncio, time\nGAP = 0.5\nasync def f(x):\n    await asyncio.sleep(0.2)\n    time.sleep(GAP)\n"
        "    await asyncio.sleep(0.01)\n    await asyncio.sleep(x)\n    await asyncio.sleep(1)  # fake platform\n"
        "    await clock.sleep(3600)\n"
    )
    global TESTS
    saved, TESTS = TESTS, tmp_path
    try:
        assert [line.split(": ", 1)[1] for line in _long_sleeps(sample)] == [
            "await asyncio.sleep(0.2)",
            "time.sleep(GAP)",
            "await asyncio.sleep(x)",
        ]
    finally:
        TESTS = saved
