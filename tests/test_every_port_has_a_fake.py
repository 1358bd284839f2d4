"""Every port of the store has an in-memory fake that looks like it.

The ports are found by reading ``bot/store`` (every class there that derives from ``Protocol``), so a new port fails
here until it is given a fake in :data:`FAKES` (or, being a value rather than a repository, a reason in
:data:`EXEMPT`). For each port and its fake: every public method, property and attribute of the port is on the fake,
a method with the port's parameters by name and in order (the fake may add optional ones after them), async where
the port's is. That the fake *behaves* like the SQL store is the contract suites' part
(``tests/store/test_*contract.py``); that it type-checks as the port is :func:`_typed`'s (mypy).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.jobs.triggers import Trigger
from bot.store import base, bundle, console_ports, ports, run_ports
from tests.fakes.all_repos import FakeRepos
from tests.fakes.chat_store import FakeChatStore
from tests.fakes.console_repos import FakeBacklog, FakeConsoleReads, FakeReplay, FakeScrub
from tests.fakes.memory_repos import FakeMemory
from tests.fakes.more_repos import FakeEvalRuns, FakePairing, FakeUsage
from tests.fakes.repos import FakeJobs, FakeScheduled, FakeTraces, FakeWebSessions
from tests.fakes.run_repos import FakeRuns

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "bot" / "store"

FAKES: dict[str, Callable[[], object]] = {
    # the chat store (bot/store/base.py, ports.py, bundle.py)
    "bot.store.base.Store": FakeChatStore,
    "bot.store.base.SettingsReader": FakeChatStore,
    "bot.store.base.EventLog": FakeChatStore,
    "bot.store.ports.ChatReads": FakeChatStore,
    "bot.store.ports.TurnStore": FakeChatStore,
    "bot.store.ports.ChatStore": FakeChatStore,
    "bot.store.bundle.PartitionedStore": FakeChatStore,
    "bot.store.bundle.SettingsAnnounce": lambda: FakeChatStore().settings,
    # the run tables (bot/store/run_ports.py)
    "bot.store.run_ports.LedgerRepo": FakeRuns,
    "bot.store.run_ports.AuditLog": FakeRuns,
    "bot.store.run_ports.RunRepo": FakeRuns,
    "bot.store.run_ports.InterruptRepo": FakeRuns,
    "bot.store.run_ports.Runs": FakeRuns,
    # the repositories (bot/store/ports.py, console_ports.py)
    "bot.store.ports.ScheduledRepo": FakeScheduled,
    "bot.store.ports.JobRepo": FakeJobs,
    "bot.store.ports.PairingRepo": FakePairing,
    "bot.store.ports.UsageRepo": FakeUsage,
    "bot.store.ports.MemoryRepo": FakeMemory,
    "bot.store.ports.ScrubRepo": FakeScrub,
    "bot.store.ports.Repos": FakeRepos,
    "bot.store.console_ports.WebSessionRepo": FakeWebSessions,
    "bot.store.console_ports.ConsoleReads": FakeConsoleReads,
    "bot.store.console_ports.BacklogCounts": FakeBacklog,
    "bot.store.console_ports.EvalRepo": FakeEvalRuns,
    "bot.store.console_ports.ReplaySource": FakeReplay,
    "bot.store.console_ports.TraceRepo": FakeTraces,
}
"""Each port (``module.Class``) and what makes its fake."""

EXEMPT: dict[str, str] = {
    "bot.store.values.Change": "an opaque value a repository hands out and takes back, never implemented by a caller",
    "bot.store.values.StoredTrigger": "a value stored in the jobs table (a schedule), not a repository",
    "bot.store.values.TriggerReader": "how a job's stored schedule is read back: a codec given to the jobs table",
    "bot.store.sql.engine.Reader": "the SQL engine's own read connection, inside the SQL store: no service sees it",
}
"""Protocols of ``bot/store`` that are not ports, and why."""


def _protocols_in(path: Path) -> list[str]:
    """The classes of one module that derive from ``Protocol`` (by reading it)."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    found = []
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.ClassDef):
            bases = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]
            if any(isinstance(b, ast.Name) and b.id == "Protocol" for b in bases):
                found.append(f"{module}.{node.name}")
    return found


def _store_protocols() -> list[str]:
    return sorted(p for path in sorted(STORE.rglob("*.py")) for p in _protocols_in(path))


def _port(name: str) -> type:
    module, _, cls = name.rpartition(".")
    found: type = getattr(importlib.import_module(module), cls)
    return found


def _members(port: type) -> dict[str, Any]:
    """The port's public members (its own and those of the ports it extends): a function, a property, or None for
    an attribute it only declares."""
    members: dict[str, Any] = {}
    for cls in reversed(port.__mro__):
        if not getattr(cls, "_is_protocol", False) or cls.__module__ == "typing":
            continue
        for name in vars(cls).get("__annotations__", {}):
            members.setdefault(name, None)
        for name, value in vars(cls).items():
            if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
                members[name] = value
    return {n: v for n, v in members.items() if not n.startswith("_")}


def _fits(wanted: inspect.Signature, got: inspect.Signature) -> str | None:
    """Why ``got`` does not take what ``wanted`` names (None: it does)."""
    want, have = list(wanted.parameters.values()), list(got.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    want_pos = [p.name for p in want if p.kind in positional]
    have_pos = [p.name for p in have if p.kind in positional]
    if have_pos[: len(want_pos)] != want_pos:
        return f"takes {have_pos}, the port {want_pos}"
    have_names = {p.name: p for p in have}
    for p in want:
        if p.kind not in positional and p.name not in have_names:
            return f"lacks {p.name}"
    wanted_names = {p.name for p in want}
    for p in have:
        optional = p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        if p.name not in wanted_names and not optional:
            return f"needs {p.name}, which the port does not give"
    return None


def _mismatches(port: type, fake: object) -> list[str]:
    bad = []
    cls = type(fake)
    for name, member in _members(port).items():
        if not hasattr(fake, name):
            bad.append(f"{name}: missing")
            continue
        mine = inspect.getattr_static(cls, name, None)
        if member is None or isinstance(member, property):
            if inspect.isfunction(mine):
                bad.append(f"{name}: a method, the port's is a value")
            continue
        if not inspect.isfunction(mine):
            bad.append(f"{name}: not a method")
            continue
        if inspect.iscoroutinefunction(member) != inspect.iscoroutinefunction(mine):
            bad.append(f"{name}: async differs")
        why = _fits(inspect.signature(member), inspect.signature(mine))
        if why is not None:
            bad.append(f"{name}: {why}")
    return bad


def test_every_store_protocol_is_a_port_with_a_fake_or_exempt() -> None:
    found = _store_protocols()
    modules = {p.rpartition(".")[0] for p in found}
    assert {m.__name__ for m in (base, ports, run_ports, console_ports, bundle)} <= modules, "the ports are found"
    unknown = [p for p in found if p not in FAKES and p not in EXEMPT]
    assert unknown == [], "give each new port a fake in tests/fakes and FAKES (or a reason in EXEMPT)"
    assert sorted([*FAKES, *EXEMPT]) == found, "FAKES and EXEMPT name only protocols that exist"


@pytest.mark.parametrize("name", sorted(FAKES))
def test_the_fake_has_every_member_of_its_port(name: str) -> None:
    assert _mismatches(_port(name), FAKES[name]()) == []


def test_the_check_sees_a_missing_method_and_other_parameters() -> None:
    class Partial:
        async def add(self, line: Any) -> None: ...

        async def recent(self, suite: str | None, limit: int, extra: int) -> list[Any]:
            return []

        async def data(self, run_id: str, *, also: bool = False) -> str | None:
            return None

    assert _mismatches(_port("bot.store.console_ports.EvalRepo"), Partial()) == [
        "add: takes ['self', 'line'], the port ['self', 'line', 'data']",
        "recent: needs extra, which the port does not give",
        "previous: missing",
    ]


def _typed() -> None:
    """Never run: mypy checks that each fake is its ports."""
    chat = FakeChatStore()
    _store: ports.Store = chat
    _settings: ports.SettingsReader = chat
    _events: ports.EventLog = chat
    _reads: ports.ChatReads = chat
    _turns: ports.TurnStore = chat
    _chats: ports.ChatStore = chat
    _partitioned: ports.PartitionedStore = chat
    _announce: ports.SettingsAnnounce = chat.settings
    runs = FakeRuns()
    _ledger: ports.LedgerRepo = runs
    _audit: ports.AuditLog = runs
    _run: ports.RunRepo = runs
    _interrupts: ports.InterruptRepo = runs
    _runs: ports.Runs = runs
    repos: FakeRepos[Trigger] = FakeRepos()
    _repos: ports.Repos[Trigger] = repos
    _scheduled: ports.ScheduledRepo = repos.scheduled
    _jobs: ports.JobRepo[Trigger] = repos.jobs
    _pairing: ports.PairingRepo = repos.pairing
    _usage: ports.UsageRepo = repos.usage
    _memories: ports.MemoryRepo = FakeMemory()
    _scrub: ports.ScrubRepo = FakeScrub()
    _sessions: ports.WebSessionRepo = repos.web_sessions
    _console: ports.ConsoleReads = FakeConsoleReads()
    _backlog: ports.BacklogCounts = FakeBacklog()
    _evals: ports.EvalRepo = repos.evals
    _replay: ports.ReplaySource = FakeReplay()
    _traces: ports.TraceRepo = repos.traces
