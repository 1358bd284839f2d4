"""What an eval run found: per check, turn, trial (a case run once against one model), case and model; saved as
JSON, compared with the suite's previous run.

A trial passes when every check of every turn held (a judge that could not judge is a skipped check, neither
way); a trial the budget stopped before it started counts as not passed.  Latency is a turn's time from the
message (or press) to the gateway having settled; cost is estimated from ``budgets.prices``, as the bot counts
it (the judge's calls apart, and in the total).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from bot.evals.pairs import PairResult
from bot.redaction import Redaction

RESULT_CHARS = 2000
"""An answer kept in the results is cut here (the trace of a failing trial is kept whole)."""


class JudgeRecord(BaseModel):
    """A judge's verdict: what it was asked, what it said."""

    model: str
    prompt: str
    score: float | None = None
    reason: str = ""
    threshold: float = 0.7
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cached: bool = False
    """Answered from the response cache or a cassette (it cost nothing)."""


class CheckResult(BaseModel):
    check: str
    """Its kind: agent, tool, no_tool, interrupt, answer, notice, handoff, memory, files, judge, status, latency_ms,
    check (Python), script; a case's own: max_cost, max_latency_ms, check."""
    expected: str
    passed: bool | None
    """None: skipped (a judge that cannot judge)."""
    seen: str = ""
    """What the turn did instead (or did, when it held)."""
    judge: JudgeRecord | None = None
    error: bool = False
    """The check could not be made (a Python check raised, the sentence encoder did not load): not passed, and
    an error apart from a failure (``seen`` says why)."""


class SimulatorRecord(BaseModel):
    """A simulated person's calls (``simulate:``): counted in the trial's model calls, tokens and cost, and shown
    apart as the simulator's."""

    model: str
    calls: int = 0
    cached_calls: int = 0
    """Of ``calls``, answered from the response cache (no cost)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    ended: str = ""
    """How the conversation ended: the person said done (and why), or the turns or the cost ran out."""


class ToolSeen(BaseModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class TurnResult(BaseModel):
    index: int
    action: str
    """``user: …``, ``press: …`` or ``choice: …``."""
    agent: str | None = None
    tools: list[ToolSeen] = Field(default_factory=list)
    interrupts: list[str] = Field(default_factory=list)
    handoffs: list[str] = Field(default_factory=list)
    answer: str = ""
    status: str | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    model_calls: int = 0
    """The model under test's calls (the router's too), answered by the model or from the cache."""
    cached_calls: int = 0
    """Of ``model_calls``, those answered from the response cache or a cassette: no call reached the model, and
    they cost nothing (their tokens are the recorded answer's)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    latency_ms: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.passed is not False for c in self.checks)


class TrialResult(BaseModel):
    case: str
    model: str
    attempt: int = 1
    passed: bool = False
    skipped: str | None = None
    """Why it did not run (the budget was reached)."""
    error: str | None = None
    """Why it could not be set up or finished (a configuration error, a crash)."""
    turns: list[TurnResult] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    """Checks of the whole trial (the scripted model's answers all used; a simulated conversation's end checks)."""
    simulator: SimulatorRecord | None = None
    """The simulated person's calls (a ``simulate:`` case)."""
    duration_ms: float = 0.0
    events: list[dict[str, Any]] = Field(default_factory=list)
    """The trace of a trial that failed, for showing what happened."""

    @property
    def all_checks(self) -> list[CheckResult]:
        return [c for t in self.turns for c in t.checks] + self.checks

    @property
    def judge_cost(self) -> float:
        return sum(c.judge.cost for c in self.all_checks if c.judge is not None)

    @property
    def cost(self) -> float:
        return sum(t.cost for t in self.turns) + self.judge_cost + self.simulator_cost

    @property
    def simulator_cost(self) -> float:
        return self.simulator.cost if self.simulator is not None else 0.0

    @property
    def model_calls(self) -> int:
        """The model under test's calls (the router's too) and the simulated person's; the judge's apart."""
        return sum(t.model_calls for t in self.turns) + (self.simulator.calls if self.simulator else 0)

    @property
    def input_tokens(self) -> int:
        return sum(t.input_tokens for t in self.turns) + (self.simulator.input_tokens if self.simulator else 0)

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns) + (self.simulator.output_tokens if self.simulator else 0)

    @property
    def tool_calls(self) -> int:
        return sum(len(t.tools) for t in self.turns)

    @property
    def latency_ms(self) -> float:
        return sum(t.latency_ms for t in self.turns)

    @property
    def errored(self) -> str | None:
        """Why the trial could not be judged on its merits (None: it was): it could not be set up or finished, a
        turn could not be played, the model's endpoint failed, or the judge did. JUnit counts these as errors,
        apart from failures (a regression)."""
        if self.passed or self.skipped:
            return None
        if self.error:
            return self.error
        for turn in self.turns:
            if turn.error:
                return f"turn {turn.index}: {turn.error}"
        for event in self.events:
            message = str(event.get("message") or "")  # kept flat (:meth:`TraceEvent.as_dict`)
            if event.get("type") == "error" and message.startswith("model error"):
                return message
        for check in self.all_checks:
            if check.passed is False and check.check == "judge" and check.seen.startswith(JUDGE_FAILED):
                return check.seen
            if check.passed is False and check.error:
                return f"{check.check}: {check.expected}: {check.seen}"
        return None

    def failures(self) -> list[str]:
        """Each failed check (and error) as one line: where, what was expected, what happened."""
        out = [f"error: {self.error}"] if self.error else []
        for turn in self.turns:
            if turn.error:
                out.append(f"turn {turn.index} ({turn.action}): {turn.error}")
            out += [
                f"turn {turn.index} ({turn.action}): {c.check}: expected {c.expected}; saw {c.seen or 'nothing'}"
                for c in turn.checks
                if c.passed is False
            ]
        out += [f"{c.check}: expected {c.expected}; saw {c.seen}" for c in self.checks if c.passed is False]
        return out


JUDGE_FAILED = ("the judge failed", "the judge did not answer")
"""How a judge check that the judge could not score starts its ``seen`` (:mod:`bot.evals.judge`)."""


class Totals(BaseModel):
    trials: int = 0
    passed: int = 0
    skipped: int = 0
    checks: int = 0
    checks_passed: int = 0
    model_calls: int = 0
    cached_calls: int = 0
    """Of ``model_calls``, answered from the cache (or a cassette)."""
    judge_cached: int = 0
    """Judge calls answered from the cache (or a cassette)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    tool_calls: int = 0
    cost: float = 0.0
    judge_cost: float = 0.0
    simulator_cost: float = 0.0
    """Of ``cost``, the simulated persons' calls."""
    latency_ms_p50: float = 0.0
    """The median turn."""
    latency_ms_max: float = 0.0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    @classmethod
    def of(cls, trials: list[TrialResult]) -> Totals:
        latencies = [t.latency_ms for trial in trials for t in trial.turns]
        checks = [c for trial in trials for c in trial.all_checks if c.passed is not None]
        return cls(
            trials=len(trials),
            passed=sum(t.passed for t in trials),
            skipped=sum(t.skipped is not None for t in trials),
            checks=len(checks),
            checks_passed=sum(bool(c.passed) for c in checks),
            model_calls=sum(t.model_calls for t in trials),
            cached_calls=sum(t.cached_calls for trial in trials for t in trial.turns)
            + sum(t.simulator.cached_calls for t in trials if t.simulator is not None),
            judge_cached=sum(1 for t in trials for c in t.all_checks if c.judge is not None and c.judge.cached),
            input_tokens=sum(t.input_tokens for t in trials),
            output_tokens=sum(t.output_tokens for t in trials),
            cached_tokens=sum(t.cached_tokens for trial in trials for t in trial.turns)
            + sum(t.simulator.cached_tokens for t in trials if t.simulator is not None),
            tool_calls=sum(t.tool_calls for t in trials),
            cost=round(sum(t.cost for t in trials), 9),
            judge_cost=round(sum(t.judge_cost for t in trials), 9),
            simulator_cost=round(sum(t.simulator_cost for t in trials), 9),
            latency_ms_p50=round(statistics.median(latencies), 3) if latencies else 0.0,
            latency_ms_max=round(max(latencies), 3) if latencies else 0.0,
        )


class RunResult(BaseModel):
    id: str
    suite: str
    source: str = ""
    """The suite file, or ``traces since …`` for cases made from traces."""
    started_at: datetime
    finished_at: datetime | None = None
    models: list[str] = Field(default_factory=list)
    repeat: int = 1
    concurrency: int = 1
    budget: float | None = None
    stopped: str | None = None
    """Why trials were left out (the budget was reached)."""
    trials: list[TrialResult] = Field(default_factory=list)
    pairwise: list[PairResult] = Field(default_factory=list)
    """The models' answers compared two at a time (``expect: {pairwise: …}``): not part of any pass rate."""

    @property
    def totals(self) -> Totals:
        return Totals.of(self.trials)

    @property
    def pairwise_cost(self) -> float:
        """The pairwise judge's calls (in the run's cost, apart from every model's)."""
        return sum(p.cost for p in self.pairwise)

    @property
    def pass_rate(self) -> float:
        return self.totals.pass_rate

    def by_model(self) -> dict[str, Totals]:
        return {m: Totals.of([t for t in self.trials if t.model == m]) for m in self.models}

    def by_case(self) -> dict[tuple[str, str], Totals]:
        keys = dict.fromkeys((t.case, t.model) for t in self.trials)
        return {k: Totals.of([t for t in self.trials if (t.case, t.model) == k]) for k in keys}

    def summary(self) -> dict[str, Any]:
        """The figures the store keeps beside the whole result (the web console's list of runs)."""
        totals = self.totals
        return {
            "cases": len({t.case for t in self.trials}),
            "trials": totals.trials,
            "passed": totals.passed,
            "pass_rate": round(totals.pass_rate, 4),
            "cost": round(totals.cost + self.pairwise_cost, 9),
            "status": "stopped" if self.stopped else ("passed" if totals.passed == totals.trials else "failed"),
        }


# -- the redaction step ------------------------------------------------------------------------------

Result = TypeVar("Result", bound=BaseModel)
_MARK = re.compile(r"‹redacted: [^›]*›")


def redacted(result: Result, redaction: Redaction | None = None, typed: Iterable[str] = ()) -> Result:
    """``result`` (a trial or a whole run) with every secret in it replaced (:mod:`bot.redaction`: the configured
    secret values, values under secret-looking names, and what looks like a password, key or token in any text:
    what the person typed, the answers, tool arguments, judges' prompts, the trace of a failing trial).

    ``typed``: what the person said in the case; a secret the step finds there (``my password is …``) is
    replaced wherever else it shows too (an answer or a tool's argument that repeats it without its label)."""
    step = redaction if redaction is not None else Redaction()
    learned = typed_secrets(typed, step)
    if learned:
        step = Redaction([*step.secrets, *learned])
    return type(result).model_validate(step.value(result.model_dump(mode="json")))


def typed_secrets(texts: Iterable[str], step: Redaction) -> set[str]:
    """The values the redaction step takes out of ``texts`` (short texts, a few secrets each)."""
    found: set[str] = set()
    for text in texts:
        shown = step.text(text)
        if shown == text or len(text) > 4000:
            continue
        kept = _MARK.split(shown)
        if len(kept) > 20:
            continue
        pattern = "(.+?)".join(re.escape(part) for part in kept)
        match = re.fullmatch(pattern, text, re.DOTALL)
        if match is not None:
            found.update(value.strip() for value in match.groups())
    return {value for value in found if len(value) >= 8}


# -- files -------------------------------------------------------------------------------------------


def save_json(result: RunResult, folder: Path) -> Path:
    """Write ``result`` as ``<suite>-<time>-<id>.json`` in ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.suite}-{result.started_at:%Y%m%dT%H%M%S}-{result.id[-8:]}.json"
    path.write_text(redacted(result).model_dump_json(indent=1), encoding="utf-8")
    return path


def previous_run(folder: Path, suite: str, before: RunResult | None = None) -> RunResult | None:
    """The suite's newest run saved in ``folder`` (other than ``before``, and started before it)."""
    found: list[RunResult] = []
    for path in folder.glob(f"{suite}-*.json"):
        try:
            run = RunResult.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if run.suite == suite and (before is None or (run.id != before.id and run.started_at <= before.started_at)):
            found.append(run)
    return max(found, key=lambda r: r.started_at) if found else None


# -- against the last run ----------------------------------------------------------------------------


def _rate(totals: Totals | None) -> str:
    if totals is None:
        return "—"
    if totals.trials == 1:
        return "passed" if totals.passed else ("skipped" if totals.skipped else "failed")
    return f"{totals.passed}/{totals.trials}" + (f" ({totals.skipped} skipped)" if totals.skipped else "")


def diff(previous: RunResult, current: RunResult) -> list[str]:
    """What changed since ``previous``: cases that passed and fail (or the other way, or were skipped), cases new
    or gone, and each model's pass rate, cost, tokens and latency.  A run of some of the cases (``--case``,
    ``--tag``) is compared with the same cases of ``previous``, not with the cases it left out."""
    ran, ran_before = {t.case for t in current.trials}, {t.case for t in previous.trials}
    lines = []
    if ran < ran_before:
        lines.append(f"compared on the {len(ran)} case(s) run this time ({len(ran_before - ran)} not run)")
        previous = previous.model_copy(update={"trials": [t for t in previous.trials if t.case in ran]})
    before, now = previous.by_case(), current.by_case()
    for key in sorted(set(before) | set(now)):
        case, model = key
        old, new = before.get(key), now.get(key)
        if old is None:
            lines.append(f"{case} [{model}]: new, {_rate(new)}")
        elif new is None:
            lines.append(f"{case} [{model}]: not run this time (was {_rate(old)})")
        elif (old.passed, old.trials, old.skipped) != (new.passed, new.trials, new.skipped):
            lines.append(f"{case} [{model}]: {_rate(old)} → {_rate(new)}")
    old_models, new_models = previous.by_model(), current.by_model()
    for model, new in new_models.items():
        old = old_models.get(model)
        if old is None:
            continue
        lines.append(
            f"{model}: pass rate {old.pass_rate:.0%} → {new.pass_rate:.0%}, cost ${old.cost:.4f} → ${new.cost:.4f}, "
            f"tokens {old.input_tokens + old.output_tokens:,} → {new.input_tokens + new.output_tokens:,}, "
            f"median turn {old.latency_ms_p50:.0f} → {new.latency_ms_p50:.0f} ms"
        )
    return lines
