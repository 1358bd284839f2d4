"""A turn's checks against what the turn did (:class:`~bot.evals.seat.TurnLog`): each gives a
:class:`~bot.evals.results.CheckResult` saying what was expected and what was seen."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from agents.guardrails import validate
from bot.evals.pycheck import Transcript, code_check, transcript
from bot.evals.results import CheckResult, ToolSeen
from bot.evals.seat import TurnLog
from bot.evals.similar import similar_checks
from bot.evals.suite import AnswerCheck, Expect, JudgeCheck, ToolCheck

SHOWN_CHARS = 300


@dataclass
class CheckContext:
    """What checks read beyond the turn itself."""

    workspace: Path
    memories: Callable[[], Awaitable[list[tuple[int, str]]]]
    """Every memory of the case's store: (id, text)."""
    judge: Callable[[JudgeCheck, str], Awaitable[CheckResult]]
    """Scores the turn's answer against a rubric (given the answer)."""
    base_dir: Path | None = None
    """The suite's folder (where Python checks are loaded from)."""
    index: int = 0
    """The turn's number (from 1)."""
    said: str = ""
    """What the person did in the turn (``press: …`` for a button)."""
    earlier: Sequence[Transcript] = ()
    """The case's turns before this one, for Python checks."""
    encoder: str = "use"
    """The sentence encoder of ``answer.similar`` (``routing.rule.encoder``)."""


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tools_of(log: TurnLog) -> list[ToolSeen]:
    return [
        ToolSeen(name=str(e.data.get("tool", "")), args=dict(e.data.get("arguments") or {}), error=e.data.get("error"))
        for e in log.of("tool_call")
    ]


def call_text(tool: ToolSeen) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in tool.args.items())
    return shown(f"{tool.name}({args})" + (" (failed)" if tool.error else ""), 160)


async def check_turn(expect: Expect, log: TurnLog, ctx: CheckContext) -> list[CheckResult]:
    out: list[CheckResult] = []
    tools = tools_of(log)
    called = "; ".join(call_text(t) for t in tools) or "no tool called"
    if expect.agent is not None:
        out.append(
            CheckResult(check="agent", expected=expect.agent, passed=log.agent == expect.agent, seen=str(log.agent))
        )
    for tool in expect.tool:
        count = sum(1 for t in tools if t.name == tool.name and args_match(tool, t.args))
        ok = count >= 1 if tool.times is None else count == tool.times
        seen = called if tool.times is None or not count else f"{count} matching call(s); {called}"
        out.append(CheckResult(check="tool", expected=_tool_expected(tool), passed=ok, seen=seen))
    if expect.exact_tools:
        listed = {t.name for t in expect.tool}
        others = [t for t in tools if t.name not in listed]
        out.append(
            CheckResult(
                check="exact_tools",
                expected="no other tool: " + (", ".join(sorted(listed)) or "none"),
                passed=not others,
                seen="; ".join(call_text(t) for t in others) or called,
            )
        )
    if expect.no_tool is True or (isinstance(expect.no_tool, list) and expect.no_tool):
        names = None if expect.no_tool is True else set(expect.no_tool)
        bad = [t for t in tools if names is None or t.name in names]
        what = "no tool call" if names is None else "no call of " + ", ".join(sorted(names))
        out.append(CheckResult(check="no_tool", expected=what, passed=not bad, seen=called))
    out += _interrupt(expect, log)
    if expect.answer is not None:
        out += _answer(expect.answer, log.answer)
        out += await similar_checks(expect.answer.similar, expect.answer.threshold, log.answer, ctx.encoder)
    for text in expect.notice:
        notices = log.notices
        ok = any(text.casefold() in n.casefold() for n in notices)
        out.append(
            CheckResult(check="notice", expected=f"contains {text!r}", passed=ok, seen=shown(" | ".join(notices)))
        )
    out += _handoffs(expect, log)
    if expect.memory is not None:
        out += await _memory(expect, log, ctx)
    out += _files(expect, ctx.workspace)
    if expect.status is not None:
        out.append(
            CheckResult(
                check="status", expected=expect.status, passed=log.status == expect.status, seen=str(log.status)
            )
        )
    for rubric in expect.judge:
        out.append(await ctx.judge(rubric, log.answer))
    if expect.latency_ms is not None:
        ok = log.latency_ms <= expect.latency_ms
        seen = f"{log.latency_ms:.0f} ms"
        out.append(CheckResult(check="latency_ms", expected=f"≤ {expect.latency_ms:g} ms", passed=ok, seen=seen))
    if expect.check:
        seen_turn = transcript(ctx.index, ctx.said, log, ctx.workspace, ctx.earlier)
        out += [await code_check(spec, ctx.base_dir, seen_turn) for spec in expect.check]
    return out


def args_match(check: ToolCheck, args: dict[str, Any]) -> bool:
    if check.args is None:
        return True
    if check.match == "exact":
        return _canonical(args) == _canonical(check.args)
    if check.match == "subset":
        return _subset(check.args, args)
    if check.match == "regex":
        return all(
            key in args and re.search(str(pattern), args[key] if isinstance(args[key], str) else _canonical(args[key]))
            for key, pattern in check.args.items()
        )
    return not list(jsonschema.Draft202012Validator(check.args).iter_errors(args))


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _subset(v, actual[k]) for k, v in expected.items())
    return _canonical(expected) == _canonical(actual)


def _tool_expected(tool: ToolCheck) -> str:
    text = tool.name
    if tool.args is not None:
        text += f" {tool.match} {shown(tool.args, 160)}"
    return text + (f" ×{tool.times}" if tool.times is not None else "")


def _interrupt(expect: Expect, log: TurnLog) -> list[CheckResult]:
    raised = [str(e.data.get("kind")) for e in log.of("interrupt") if e.data.get("status") == "raised"]
    seen = ", ".join(raised) or "no pause"
    if expect.interrupt is False:
        return [CheckResult(check="interrupt", expected="no pause", passed=not raised, seen=seen)]
    if expect.interrupt is None:
        return []
    wanted = expect.interrupt
    out = [CheckResult(check="interrupt", expected=wanted.kind, passed=wanted.kind in raised, seen=seen)]
    if wanted.prompt is not None:
        ok = wanted.prompt.casefold() in log.prompt.casefold()
        out.append(
            CheckResult(
                check="interrupt", expected=f"prompt contains {wanted.prompt!r}", passed=ok, seen=shown(log.prompt)
            )
        )
    return out


def _answer(check: AnswerCheck, answer: str) -> list[CheckResult]:
    def has(text: str) -> bool:
        return text.casefold() in answer.casefold() if check.ignore_case else text in answer

    seen = shown(answer) or "no answer"
    out = [CheckResult(check="answer", expected=f"contains {t!r}", passed=has(t), seen=seen) for t in check.contains]
    out += [
        CheckResult(check="answer", expected=f"does not contain {t!r}", passed=not has(t), seen=seen)
        for t in check.not_contains
    ]
    if check.matches is not None:
        flags = re.DOTALL | (re.IGNORECASE if check.ignore_case else 0)
        ok = re.search(check.matches, answer, flags) is not None
        out.append(CheckResult(check="answer", expected=f"matches /{check.matches}/", passed=ok, seen=seen))
    if check.equals is not None:
        a, b = answer.strip(), check.equals.strip()
        ok = a.casefold() == b.casefold() if check.ignore_case else a == b
        out.append(CheckResult(check="answer", expected=f"equals {check.equals!r}", passed=ok, seen=seen))
    if check.json_schema is not None:
        errors = validate(answer, check.json_schema)
        out.append(
            CheckResult(
                check="answer",
                expected="fits its JSON schema",
                passed=not errors,
                seen="; ".join(errors) or seen,
            )
        )
    return out


def _handoffs(expect: Expect, log: TurnLog) -> list[CheckResult]:
    accepted = [(e.agent, str(e.data.get("target"))) for e in log.of("handoff") if e.data.get("status") == "accepted"]
    seen = ", ".join(f"{a} → {t}" for a, t in accepted) or "no handoff"
    if expect.handoff is False:
        return [CheckResult(check="handoff", expected="no handoff", passed=not accepted, seen=seen)]
    out = []
    for wanted in expect.handoff or []:
        ok = any(t == wanted.to and (wanted.source is None or a == wanted.source) for a, t in accepted)
        expected = f"{wanted.source or '…'} → {wanted.to}"
        out.append(CheckResult(check="handoff", expected=expected, passed=ok, seen=seen))
    return out


async def _memory(expect: Expect, log: TurnLog, ctx: CheckContext) -> list[CheckResult]:
    assert expect.memory is not None
    memories = await ctx.memories()
    out = []
    if expect.memory.stored is not None:
        wanted = expect.memory.stored.casefold()
        ok = any(wanted in text.casefold() for _id, text in memories)
        seen = shown("; ".join(text for _id, text in memories)) or "nothing remembered"
        out.append(CheckResult(check="memory", expected=f"stored {expect.memory.stored!r}", passed=ok, seen=seen))
    if expect.memory.recalled is not None:
        ids = {int(i) for e in log.of("memory") for i in e.data.get("recalled") or [] if str(i).isdigit()}
        texts = [text for i, text in memories if i in ids]
        texts += [str(e.data.get("result") or "") for e in log.of("tool_call") if e.data.get("tool") == "recall"]
        wanted = expect.memory.recalled.casefold()
        ok = any(wanted in text.casefold() for text in texts)
        seen = shown("; ".join(texts)) or "nothing recalled"
        out.append(CheckResult(check="memory", expected=f"recalled {expect.memory.recalled!r}", passed=ok, seen=seen))
    return out


def _files(expect: Expect, workspace: Path) -> list[CheckResult]:
    out = []
    for name, wanted in expect.files.items():
        path = workspace / name
        exists = path.is_file()
        if wanted is False:
            out.append(CheckResult(check="files", expected=f"no {name}", passed=not exists, seen=_file_seen(path)))
        elif wanted is True:
            out.append(CheckResult(check="files", expected=f"{name} exists", passed=exists, seen=_file_seen(path)))
        else:
            ok = exists and wanted in path.read_text(encoding="utf-8", errors="replace")
            expected = f"{name} contains {wanted!r}"
            out.append(CheckResult(check="files", expected=expected, passed=ok, seen=_file_seen(path)))
    return out


def _file_seen(path: Path) -> str:
    if not path.is_file():
        return f"no {path.name}"
    return shown(path.read_text(encoding="utf-8", errors="replace"))


def script_check(remaining: int, errors: Sequence[str]) -> CheckResult:
    """The scripted model's answers were all used, and no call found none left: the run asked the model exactly
    as often as the script says."""
    seen = "; ".join(errors) or (f"{remaining} answer(s) never asked for" if remaining else "all used")
    return CheckResult(
        check="script", expected="every scripted answer used", passed=not errors and not remaining, seen=seen
    )
