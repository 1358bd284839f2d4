"""Every wait and every deadline goes through the injected clock (:mod:`bot.clock`): no ``asyncio.sleep`` longer
than a yield, ``time.sleep``, ``time.time``/``time.monotonic``, ``datetime.now``/``utcnow`` or an event loop's
``time()`` in ``bot``, ``channels`` or ``agents`` outside ``bot/clock.py`` and ``agents/clock.py`` (as
tests/test_no_raw_sql.py keeps SQL in the store), so a test's ``FakeClock`` moves every back-off, pace and expiry
without real waiting.

``time.perf_counter`` is not looked for: it measures how long our own work took (metrics, reports), which a fake
clock would only hide.  The modules in :data:`STILL_REAL` read the real clock for the reason given; the list only
shrinks (an entry whose module no longer reads it fails the test, so it is taken off).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "channels", "agents")
CLOCKS = ("bot/clock.py", "agents/clock.py")
"""The clock ports: ``agents`` imports no ``bot``, so it states the part of the clock it uses itself."""

READS = {("time", "sleep"), ("time", "time"), ("time", "monotonic"), ("datetime", "now"), ("datetime", "utcnow")}
"""``module.attribute`` references that read or wait on the real clock (called or passed as a default)."""

STILL_REAL = {
    # Stamps: when a row or event happened (bot.clock: "stamps may still come from the real clock").
    "bot/events.py": "an event's received_at stamp",
    "bot/routing/corrections.py": "a correction's stamp",
    "bot/store/values.py": "rows' stamps (utcnow)",
    "bot/store/sql/lock.py": "the data dir lock's 'since' stamp, for a person reading it",
    "bot/store/sql/repos/eval_answers.py": "the eval answer cache's last-used stamps (a command-line cache)",
    "bot/bus.py": "the stamp a queued event carries",
    "bot/scale/streams.py": "Redis stream ids are milliseconds of wall time",
    # Defaults of a time source the composition root replaces with the clock's.
    "bot/gateway/intake.py": "the intake's default time source; the ack metric's age of a platform stamp",
    "bot/web/auth.py": "the login limiter's default time source",
    "bot/fencing.py": "the lease's default monotonic source",
    "bot/media/intake.py": "the media sweep's default 'now'",
    # The command line measures itself, not the gateway.
    "bot/cli/main.py": "'Ready in … s'",
    "bot/cli/startup.py": "how long each plugin took to load",
    "bot/memory/service.py": "how long a fold took (a report)",
    # Not yet on the clock (left of issue 64 point 4): an in-memory cache's freshness.
    # A real child process is waited for on real time (a fake clock would not make it exit sooner).
    "agents/tools/command.py": "run_command polls its subprocess against its time limit, on the event loop's time",
    "agents/tools/mcp/launcher.py": "reaping a child process (synchronous, no event loop: at shutdown)",
    # asyncio.timeout's deadline is in the event loop's time.
    "bot/http.py": "rescheduling an asyncio.timeout (loop time)",
}


def real_clock_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for each read of the real clock in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in READS:
                found.append((node.lineno, f"{node.value.id}.{node.attr}"))
            elif node.value.id == "loop" and node.attr == "time":
                found.append((node.lineno, "loop.time"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sleep"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "asyncio"
            and not (node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)
        ):
            found.append((node.lineno, "asyncio.sleep"))  # asyncio.sleep(0) is a yield, not a wait
        elif isinstance(node, ast.Attribute) and node.attr == "time" and isinstance(node.value, ast.Call):
            inner = node.value.func
            if isinstance(inner, ast.Attribute) and inner.attr in ("get_running_loop", "get_event_loop"):
                found.append((node.lineno, "loop.time"))
    return sorted(found)


def _modules() -> dict[str, list[tuple[int, str]]]:
    reads = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name not in CLOCKS and (found := real_clock_reads(path.read_text())):
                reads[name] = found
    return reads


def test_waits_and_deadlines_go_through_the_clock() -> None:
    reads = _modules()
    offenders = [
        f"{name}:{line}: {what}" for name, found in reads.items() if name not in STILL_REAL for line, what in found
    ]
    assert offenders == [], "wait on the injected clock (bot.clock.Clock), back off with bot.retry"


def test_the_list_of_real_clock_readers_only_shrinks() -> None:
    assert sorted(set(STILL_REAL) - set(_modules())) == []


def test_the_scan_sees_calls_defaults_and_loop_time() -> None:
    sample = (
        "import asyncio, time\nfrom datetime import datetime\n"
        "def f(clock=time.monotonic):\n    return datetime.now()\n"
        "async def g(loop, clock):\n    await asyncio.sleep(0)\n    await asyncio.sleep(1.5)\n"
        "    await clock.sleep(60)\n    time.sleep(0.1)\n    return loop.time() + asyncio.get_running_loop().time()\n"
        "started = time.perf_counter()\n"
    )
    assert real_clock_reads(sample) == [
        (3, "time.monotonic"),
        (4, "datetime.now"),
        (7, "asyncio.sleep"),
        (9, "time.sleep"),
        (10, "loop.time"),
        (10, "loop.time"),
    ]
