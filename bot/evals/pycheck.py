"""Python checks: ``check: module:function`` runs a function of the suite's folder on a turn's transcript.

The module is a file of the suite's folder: ``checks`` (``checks.py``, or ``checks/__init__.py``), ``pkg.mod``
or a path ``sub/mod.py`` (no ``..``, not absolute).  It is loaded from its file under a name of its own (two
suites' ``checks.py`` never meet in ``sys.modules``), with the suite's folder on ``sys.path`` while it loads (its
own imports of its neighbours work) and restored after.  A suite is untrusted input, so a suite with Python
checks is refused unless the operator runs it with ``--trust-suite`` (:mod:`bot.evals.trust`); a check that does
not load (no such module, no such function: with a did-you-mean) is a set-up error before any model call
(:mod:`bot.evals.preflight`).

The function gets a :class:`Transcript` and may be sync (run on a thread) or async.  It passes by returning
true (or ``(True, reason)``); it fails by returning false, ``(False, reason)``, a text (the reason), or by raising
AssertionError (its message is the reason).  Any other exception, or no answer within :data:`CHECK_TIMEOUT_S`,
is an error of the check (its type and message, no traceback), apart from failures.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path, PurePath
from types import ModuleType
from typing import TYPE_CHECKING, Any

from bot.evals.results import CheckResult

if TYPE_CHECKING:
    from bot.evals.seat import TurnLog
    from bot.evals.suite import Suite

CHECK_TIMEOUT_S = 60.0
"""The longest a Python check may take."""

REASON_CHARS = 300
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any]
    result: str | None = None
    """What the tool answered (as recorded), or None."""
    error: str | None = None


@dataclass(frozen=True)
class Transcript:
    """One turn as a Python check sees it (the case's own checks get the last turn's)."""

    index: int
    """The turn's number (from 1)."""
    user: str
    """What the person said (``press: Approve`` for a button)."""
    answer: str
    """What the bot wrote (its messages, prompts included; notices apart)."""
    tools: tuple[ToolCall, ...] = ()
    agent: str | None = None
    interrupts: tuple[str, ...] = ()
    """The kinds of the pauses raised (``tool_confirm``, ``plan_approval``, ``ask_user``)."""
    handoffs: tuple[str, ...] = ()
    """``from → to`` of each accepted handoff."""
    status: str | None = None
    notices: tuple[str, ...] = ()
    workspace: Path = field(default_factory=Path)
    """The case's workspace folder (the tools' side effects)."""
    earlier: tuple[Transcript, ...] = ()
    """The case's turns before this one, in order."""
    latency_ms: float = 0.0


def transcript(index: int, said: str, log: TurnLog, workspace: Path, earlier: Sequence[Transcript]) -> Transcript:
    """The transcript of a turn from what it did."""
    tools = tuple(
        ToolCall(
            name=str(e.data.get("tool", "")),
            args=dict(e.data.get("arguments") or {}),
            result=None if e.data.get("result") is None else str(e.data.get("result")),
            error=None if e.data.get("error") is None else str(e.data.get("error")),
        )
        for e in log.of("tool_call")
    )
    interrupts = tuple(str(e.data.get("kind")) for e in log.of("interrupt") if e.data.get("status") == "raised")
    handoffs = tuple(
        f"{e.agent} → {e.data.get('target')}" for e in log.of("handoff") if e.data.get("status") == "accepted"
    )
    return Transcript(
        index=index,
        user=said,
        answer=log.answer,
        tools=tools,
        agent=log.agent,
        interrupts=interrupts,
        handoffs=handoffs,
        status=log.status,
        notices=tuple(log.notices),
        workspace=workspace,
        earlier=tuple(earlier),
        latency_ms=log.latency_ms,
    )


class CheckLoadError(Exception):
    """A ``module:function`` that cannot be used (said as a set-up error)."""


@dataclass(frozen=True)
class CodeRef:
    """Where a suite names a Python check."""

    case_index: int
    case: str
    turn: int
    """The turn's number, or 0 for the case's own checks."""
    spec: str
    line: int = 0

    @property
    def at(self) -> str:
        return f" (line {self.line})" if self.line else ""

    @property
    def path(self) -> str:
        """``cases[0].turns[1].expect.check (line 12)``."""
        turn = f".turns[{self.turn - 1}].expect" if self.turn else ""
        return f"cases[{self.case_index}]{turn}.check{self.at}"

    @property
    def where(self) -> str:
        """``case write, turn 2, check checks:polite (line 12)``."""
        place = f"case {self.case}, turn {self.turn}" if self.turn else f"case {self.case}"
        return f"{place}, check {self.spec}{self.at}"


def code_refs(suite: Suite) -> Iterator[CodeRef]:
    """Every Python check the suite names, with its line in the file when known."""
    lines = suite._code_lines
    for i, case in enumerate(suite.cases):
        for index, turn in enumerate(case.turns, 1):
            for spec in turn.expect.check:
                yield CodeRef(i, case.id, index, spec, lines.get((case.id, index), 0))
        for spec in case.check:
            yield CodeRef(i, case.id, 0, spec, lines.get((case.id, 0), 0))


def load_problems(suite: Suite, base_dir: Path) -> list[str]:
    """Each Python check that cannot be loaded, with where it is and a did-you-mean (imports the modules: run
    only for a trusted suite)."""
    problems = []
    for ref in code_refs(suite):
        try:
            load(base_dir, ref.spec)
        except CheckLoadError as exc:
            problems.append(f"{ref.where}: {exc}")
    return problems


def load(base_dir: Path, spec: str) -> Callable[..., Any]:
    """The function ``spec`` (``module:function``) names in the suite's folder ``base_dir``."""
    name, _, function = spec.rpartition(":")
    module = _module(base_dir, name)
    found = getattr(module, function, None)
    if not callable(found):
        functions = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_"))
        near = get_close_matches(function, functions, n=1)
        hint = f"; did you mean {name}:{near[0]}?" if near else ""
        has = ", ".join(functions[:20]) or "none"
        raise CheckLoadError(f"{name} has no function {function!r}{hint} (its functions: {has})")
    return found


def _file(base_dir: Path, name: str) -> Path:
    pure = PurePath(name) if name.endswith(".py") else PurePath(*name.split("."))
    if pure.is_absolute() or ".." in pure.parts or name.startswith("~"):
        raise CheckLoadError(f"{name!r}: a module of the suite's folder (no '..', not absolute)")
    root = base_dir.resolve()
    candidates = (
        [root / pure] if name.endswith(".py") else [root / pure.with_suffix(".py"), root / pure / "__init__.py"]
    )
    for path in candidates:
        if path.is_file():
            real = path.resolve()
            if not real.is_relative_to(root):
                raise CheckLoadError(f"{name!r} is a link out of the suite's folder ({real})")
            return real
    here = sorted(p.stem for p in root.glob("*.py"))
    near = get_close_matches(pure.stem if name.endswith(".py") else name, here, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    shown = candidates[0].relative_to(root)
    raise CheckLoadError(f"no module {name!r} in the suite's folder ({root}: no {shown}){hint}")


def _module(base_dir: Path, name: str) -> ModuleType:
    path = _file(base_dir, name)
    stamp = path.stat().st_mtime_ns
    key = "_bot_eval_check_" + hashlib.sha256(f"{path}:{stamp}".encode()).hexdigest()[:16]
    with _LOCK:  # one import at a time: sys.path is the process's
        if key in sys.modules:
            return sys.modules[key]
        loader_spec = importlib.util.spec_from_file_location(key, path)
        if loader_spec is None or loader_spec.loader is None:
            raise CheckLoadError(f"{name!r} cannot be loaded as Python")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[key] = module  # before it runs: dataclasses and the like look their module up
        folder = str(base_dir.resolve())
        before = set(sys.modules)
        sys.path.insert(0, folder)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(key, None)
            raise CheckLoadError(f"{name} does not import: {type(exc).__name__}: {_short(str(exc))}") from None
        finally:
            try:
                sys.path.remove(folder)
            except ValueError:
                pass
            _forget(set(sys.modules) - before - {key}, Path(folder))
        return module


def _forget(names: set[str], folder: Path) -> None:
    """Take the suite's own modules its check imported (``helpers``) out of ``sys.modules``: the check keeps them,
    and another suite's ``helpers`` is its own."""
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            sys.modules.pop(name, None)


async def code_check(spec: str, base_dir: Path | None, seen: Transcript) -> CheckResult:
    """The Python check ``spec`` of the suite in ``base_dir`` run on ``seen``."""
    try:
        if base_dir is None:
            raise CheckLoadError("no suite folder to load it from")
        function = await asyncio.to_thread(load, base_dir, spec)
    except CheckLoadError as exc:
        return CheckResult(check="check", expected=f"{spec} holds", passed=False, seen=f"error: {exc}", error=True)
    return await run_check(spec, function, seen)


async def run_check(spec: str, function: Callable[..., Any], seen: Transcript) -> CheckResult:
    """Call ``function`` on the transcript; what it said as a check (an error apart from a failure)."""
    expected = f"{spec} holds"
    try:
        if inspect.iscoroutinefunction(function):
            answer = await asyncio.wait_for(function(seen), CHECK_TIMEOUT_S)
        else:
            answer = await asyncio.wait_for(asyncio.to_thread(function, seen), CHECK_TIMEOUT_S)
            if inspect.isawaitable(answer):
                answer = await asyncio.wait_for(answer, CHECK_TIMEOUT_S)
    except AssertionError as exc:
        return CheckResult(check="check", expected=expected, passed=False, seen=_short(str(exc)) or "assertion failed")
    except TimeoutError:
        why = f"error: no answer within {CHECK_TIMEOUT_S:g} s"
        return CheckResult(check="check", expected=expected, passed=False, seen=why, error=True)
    except Exception as exc:
        why = f"error: {type(exc).__name__}: {_short(str(exc))}"
        return CheckResult(check="check", expected=expected, passed=False, seen=why, error=True)
    return _verdict(expected, answer)


def _verdict(expected: str, answer: Any) -> CheckResult:
    if isinstance(answer, str):
        return CheckResult(check="check", expected=expected, passed=False, seen=_short(answer) or "failed")
    reason = ""
    if isinstance(answer, tuple) and len(answer) == 2 and _boolean(answer[0]):
        answer, reason = answer[0], _short(str(answer[1]))
    if _boolean(answer):
        held = bool(answer)
        return CheckResult(check="check", expected=expected, passed=held, seen=reason or ("held" if held else "failed"))
    what = "None (no return)" if answer is None else type(answer).__name__
    why = f"error: it returned {what}; a check returns true, false, (bool, reason) or a reason"
    return CheckResult(check="check", expected=expected, passed=False, seen=why, error=True)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy's too


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"
