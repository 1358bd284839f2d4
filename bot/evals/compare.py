"""Side by side: the same case played by two models in one run, or by one model in two saved runs, turn by turn.

For each pair of trials (attempt by attempt with ``--repeat``): what each side did per turn (the agent it was
routed to, the tool calls with their arguments, the pauses, the handoffs, how the turn ended, the answer), its
failed checks, latency and cost, and the **first differing step**: the first turn where the two part, and which
of error / agent / tool calls / interrupt / handoff / status / answer differs there, with both values.  A case
that passed on the left (the baseline) and fails on the right is a **regression**, the other way an
**improvement**; with repeats, a case's pass counts are compared (``3/3 → 1/3`` is a regression).  Nothing here
reads files or calls a model: it works on :class:`~bot.evals.results.RunResult` values.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, Field

from bot.evals.checks import call_text
from bot.evals.results import RunResult, TrialResult, TurnResult

Change = Literal["regression", "improvement", "changed", "same", "missing"]
CHANGES: tuple[Change, ...] = ("regression", "improvement", "changed", "same", "missing")

FIELDS = ("error", "agent", "tools", "interrupts", "handoffs", "status", "answer")
"""What is compared in a turn, in the order the first difference is looked for."""
FIELD_NAMES = {
    "turn": "turn",
    "error": "error",
    "agent": "agent",
    "tools": "tool calls",
    "interrupts": "interrupt",
    "handoffs": "handoff",
    "status": "status",
    "answer": "answer",
}
NOTHING = {"error": "no error", "agent": "no agent", "tools": "no tool", "interrupts": "none", "handoffs": "none"}


class Step(BaseModel):
    """What one side did in one turn."""

    agent: str = ""
    tools: list[str] = Field(default_factory=list)
    """Each call as ``name(arg=value, …)``."""
    interrupts: list[str] = Field(default_factory=list)
    handoffs: list[str] = Field(default_factory=list)
    status: str = ""
    answer: str = ""
    error: str = ""
    checks: int = 0
    checks_passed: int = 0
    failed: list[str] = Field(default_factory=list)
    """The turn's failed checks: ``kind: expected …; saw …``."""
    latency_ms: float = 0.0
    cost: float = 0.0

    @classmethod
    def of(cls, turn: TurnResult) -> Step:
        held = [c for c in turn.checks if c.passed is not None]
        return cls(
            agent=turn.agent or "",
            tools=[call_text(t) for t in turn.tools],
            interrupts=list(turn.interrupts),
            handoffs=list(turn.handoffs),
            status=turn.status or "",
            answer=turn.answer,
            error=turn.error or "",
            checks=len(held),
            checks_passed=sum(bool(c.passed) for c in held),
            failed=[f"{c.check}: expected {c.expected}; saw {c.seen or 'nothing'}" for c in held if not c.passed],
            latency_ms=turn.latency_ms,
            cost=turn.cost,
        )

    def shown(self, name: str) -> str:
        """The value of field ``name`` as one line."""
        if name == "turn":
            return "played"
        value = getattr(self, name)
        if isinstance(value, list):
            return "; ".join(value) if value else NOTHING[name]
        return value or NOTHING.get(name, "—")


def _same(name: str, left: TurnResult, right: TurnResult) -> bool:
    if name == "tools":  # names and arguments, not how they print
        return _calls(left) == _calls(right)
    if name == "answer":  # the same words: spacing aside
        return _words(left.answer) == _words(right.answer)
    return bool(getattr(left, name) == getattr(right, name))


def _calls(turn: TurnResult) -> list[str]:
    return [json.dumps([t.name, t.args], sort_keys=True, ensure_ascii=False) for t in turn.tools]


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class TurnRow(BaseModel):
    index: int
    action: str
    left: Step | None = None
    right: Step | None = None
    """None: the side did not get to this turn."""
    differs: list[str] = Field(default_factory=list)
    """The fields that differ (of :data:`FIELDS`, or ``turn`` when one side lacks the turn)."""


class Difference(BaseModel):
    """The first step where two trials part."""

    turn: int
    """0: the trial itself (it could not be set up or finished)."""
    action: str
    field: str
    left: str
    right: str

    def line(self, width: int = 160) -> str:
        where = f"turn {self.turn} ({_cut(self.action, 60)})" if self.turn else "the trial"
        name = FIELD_NAMES.get(self.field, self.field)
        return f"{where}: {name}: {_cut(self.left, width)} → {_cut(self.right, width)}"


def _cut(text: str, width: int) -> str:
    text = _words(text)
    return text if len(text) <= width else text[: width - 1] + "…"


class Side(BaseModel):
    """One trial's outcome."""

    passed: bool
    skipped: str | None = None
    error: str | None = None
    checks: int = 0
    checks_passed: int = 0
    failures: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    cost: float = 0.0
    model_calls: int = 0

    @classmethod
    def of(cls, trial: TrialResult) -> Side:
        held = [c for c in trial.all_checks if c.passed is not None]
        return cls(
            passed=trial.passed,
            skipped=trial.skipped,
            error=trial.error,
            checks=len(held),
            checks_passed=sum(bool(c.passed) for c in held),
            failures=trial.failures(),
            latency_ms=round(trial.latency_ms, 3),
            cost=round(trial.cost, 9),
            model_calls=sum(t.model_calls for t in trial.turns),
        )


class Pair(BaseModel):
    """Two trials of one case side by side (the same attempt number)."""

    case: str
    attempt: int
    left: Side | None = None
    right: Side | None = None
    change: Change
    first: Difference | None = None
    turns: list[TurnRow] = Field(default_factory=list)


def pair(case: str, attempt: int, left: TrialResult | None, right: TrialResult | None) -> Pair:
    """``left`` (the baseline) and ``right`` compared turn by turn."""
    out = Pair(case=case, attempt=attempt, change="missing")
    out.left = Side.of(left) if left is not None else None
    out.right = Side.of(right) if right is not None else None
    before = {t.index: t for t in left.turns} if left is not None else {}
    after = {t.index: t for t in right.turns} if right is not None else {}
    for index in sorted(set(before) | set(after)):
        old, new = before.get(index), after.get(index)
        row = TurnRow(
            index=index,
            action=(old or new).action,  # type: ignore[union-attr]
            left=Step.of(old) if old is not None else None,
            right=Step.of(new) if new is not None else None,
        )
        if old is None or new is None:
            row.differs = ["turn"]
        else:
            row.differs = [name for name in FIELDS if not _same(name, old, new)]
        out.turns.append(row)
    if left is not None and right is not None and (left.error or "") != (right.error or ""):
        out.first = Difference(
            turn=0, action="", field="error", left=left.error or "no error", right=right.error or "no error"
        )
    for row in out.turns if left is not None and right is not None else []:  # one side missing: no step to name
        if out.first is not None:
            break
        if row.differs:
            name = row.differs[0]
            out.first = Difference(
                turn=row.index,
                action=row.action,
                field=name,
                left=row.left.shown(name) if row.left is not None else "(not played)",
                right=row.right.shown(name) if row.right is not None else "(not played)",
            )
    if out.left is None or out.right is None or out.left.skipped or out.right.skipped:
        out.change = "missing"
    elif out.left.passed != out.right.passed:
        out.change = "regression" if out.left.passed else "improvement"
    else:
        out.change = "changed" if out.first is not None else "same"
    return out


class CaseRow(BaseModel):
    """One case of one model (or a model against another), every attempt paired."""

    case: str
    left_model: str
    right_model: str
    left_passed: int = 0
    left_trials: int = 0
    right_passed: int = 0
    right_trials: int = 0
    """Trials that ran (the budget's skipped ones left out)."""
    change: Change = "same"
    pairs: list[Pair] = Field(default_factory=list)

    @property
    def label(self) -> str:
        models = self.left_model if self.left_model == self.right_model else f"{self.left_model} → {self.right_model}"
        return f"{self.case} [{models}]"

    @property
    def counts(self) -> str:
        def rate(passed: int, trials: int) -> str:
            if trials == 0:
                return "not run"
            return ("passed" if passed else "failed") if trials == 1 else f"{passed}/{trials}"

        return f"{rate(self.left_passed, self.left_trials)} → {rate(self.right_passed, self.right_trials)}"

    @property
    def first(self) -> Pair | None:
        """The pair that shows the change best: the first regression (improvement, changed one) of the row."""
        wanted: Change = self.change if self.change in ("regression", "improvement") else "changed"
        return next((p for p in self.pairs if p.change == wanted), None) or next(
            (p for p in self.pairs if p.first is not None), None
        )


def case_row(
    case: str, left_model: str, right_model: str, left: list[TrialResult], right: list[TrialResult]
) -> CaseRow:
    row = CaseRow(case=case, left_model=left_model, right_model=right_model)
    ran_left, ran_right = [t for t in left if not t.skipped], [t for t in right if not t.skipped]
    row.left_trials, row.left_passed = len(ran_left), sum(t.passed for t in ran_left)
    row.right_trials, row.right_passed = len(ran_right), sum(t.passed for t in ran_right)
    by_attempt = {t.attempt: t for t in left}, {t.attempt: t for t in right}
    for attempt in sorted(set(by_attempt[0]) | set(by_attempt[1])):
        row.pairs.append(pair(case, attempt, by_attempt[0].get(attempt), by_attempt[1].get(attempt)))
    if not row.left_trials or not row.right_trials:
        row.change = "missing"
    elif row.right_passed * row.left_trials < row.left_passed * row.right_trials:
        row.change = "regression"
    elif row.right_passed * row.left_trials > row.left_passed * row.right_trials:
        row.change = "improvement"
    else:
        row.change = "same" if all(p.change in ("same", "missing") for p in row.pairs) else "changed"
    return row


class Comparison(BaseModel):
    kind: Literal["models", "runs"]
    """``models``: a run's models side by side (the first is the baseline); ``runs``: two runs."""
    suite: str
    left_run: str
    right_run: str
    """Run ids (the same one for ``models``)."""
    baseline: str
    """What the left side is: the first model, or the earlier run."""
    rows: list[CaseRow] = Field(default_factory=list)

    def of(self, change: Change) -> list[CaseRow]:
        return [r for r in self.rows if r.change == change]

    def count(self) -> dict[str, int]:
        return {change: len(self.of(change)) for change in CHANGES}

    def passes(self) -> list[tuple[str, int, int]]:
        """Each side's passed trials over the cases both ran: (label, passed, trials)."""
        both = [r for r in self.rows if r.change != "missing"]
        if self.kind == "runs":
            return [
                (f"run {short(self.left_run)}", sum(r.left_passed for r in both), sum(r.left_trials for r in both)),
                (f"run {short(self.right_run)}", sum(r.right_passed for r in both), sum(r.right_trials for r in both)),
            ]
        baseline = {r.case: (r.left_passed, r.left_trials) for r in both}  # the same for every other model
        out = {self.baseline: (sum(p for p, _ in baseline.values()), sum(n for _, n in baseline.values()))}
        for r in both:
            passed, trials = out.get(r.right_model, (0, 0))
            out[r.right_model] = (passed + r.right_passed, trials + r.right_trials)
        return [(label, p, n) for label, (p, n) in out.items()]

    def summary(self) -> str:
        n = self.count()
        said = [f"{n['regression']} regression(s)", f"{n['improvement']} improvement(s)", f"{n['changed']} changed"]
        said.append(f"{n['same']} unchanged")
        if n["missing"]:
            said.append(f"{n['missing']} not in both")
        rates = ", ".join(f"{label} {p}/{t}" for label, p, t in self.passes())
        return ", ".join(said) + (f"; passed: {rates}" if rates else "")


def short(run_id: str) -> str:
    """A run's id as its saved file names it (the last 8 characters)."""
    return run_id[-8:]


def compare_models(run: RunResult, baseline: str | None = None, others: list[str] | None = None) -> Comparison:
    """``run``'s models side by side: each of ``others`` (default: every model but the baseline) against
    ``baseline`` (default: the run's first model), case by case."""
    models = run.models or list(dict.fromkeys(t.model for t in run.trials))
    base = baseline or (models[0] if models else "")
    out = Comparison(kind="models", suite=run.suite, left_run=run.id, right_run=run.id, baseline=base)
    cases = list(dict.fromkeys(t.case for t in run.trials))
    for other in others if others is not None else [m for m in models if m != base]:
        for case in cases:
            left = [t for t in run.trials if (t.case, t.model) == (case, base)]
            right = [t for t in run.trials if (t.case, t.model) == (case, other)]
            out.rows.append(case_row(case, base, other, left, right))
    return out


def compare_runs(before: RunResult, after: RunResult) -> Comparison:
    """The same case and model in two runs: ``before`` is the baseline."""
    out = Comparison(
        kind="runs", suite=after.suite, left_run=before.id, right_run=after.id, baseline=f"run {short(before.id)}"
    )
    keys = dict.fromkeys([(t.case, t.model) for t in before.trials] + [(t.case, t.model) for t in after.trials])
    for case, model in keys:
        left = [t for t in before.trials if (t.case, t.model) == (case, model)]
        right = [t for t in after.trials if (t.case, t.model) == (case, model)]
        out.rows.append(case_row(case, model, model, left, right))
    return out


# -- as text -----------------------------------------------------------------------------------------

HEADINGS: dict[Change, str] = {
    "regression": "Regressions",
    "improvement": "Improvements",
    "changed": "Changed behaviour, same outcome",
    "missing": "Not in both",
}
MARKS: dict[Change, str] = {"regression": "✓→✗", "improvement": "✗→✓", "changed": "≠", "same": "=", "missing": "–"}


def title(comparison: Comparison) -> str:
    if comparison.kind == "models":
        models = list(dict.fromkeys([comparison.baseline, *(r.right_model for r in comparison.rows)]))
        return (
            f"Side by side: suite {comparison.suite}, run {short(comparison.left_run)}: "
            f"{models[0]} (baseline) vs {', '.join(models[1:]) or 'no other model'}"
        )
    return f"Side by side: suite {comparison.suite}: run {short(comparison.left_run)} (baseline) → run " + short(
        comparison.right_run
    )


def _figures(row: CaseRow) -> str:
    def of(sides: list[Side | None]) -> tuple[float, float]:
        ran = [s for s in sides if s is not None and not s.skipped]
        return sum(s.cost for s in ran), sum(s.latency_ms for s in ran)

    (cost_a, ms_a), (cost_b, ms_b) = of([p.left for p in row.pairs]), of([p.right for p in row.pairs])
    return f"${cost_a:.4f} → ${cost_b:.4f}, {ms_a:.0f} → {ms_b:.0f} ms"


def _one_sided(comparison: Comparison, rows: list[CaseRow]) -> list[str]:
    """The cases one side ran and the other did not: one line per side, not a line each."""
    out = [f"{HEADINGS['missing']} ({len(rows)}): compared on the cases both ran"]
    for side, name in (("left", comparison.left_run), ("right", comparison.right_run)):
        other = "right" if side == "left" else "left"
        only = [r.label for r in rows if all(getattr(p, other) is None for p in r.pairs)]
        if only:
            shown = ", ".join(only[:8]) + (f" and {len(only) - 8} more" if len(only) > 8 else "")
            where = f"run {short(name)}" if comparison.kind == "runs" else f"{side} side"
            out.append(f"  – only in {where} ({len(only)}): {shown}")
    return out


def text(comparison: Comparison, failures: int = 3) -> str:
    """Regressions first, then improvements, then changed behaviour (each with its first differing step; a
    regression with what failed), cases not in both, and a one-line summary.  Unchanged cases are counted only."""
    out = [title(comparison)]
    for change in ("regression", "improvement", "changed", "missing"):
        rows = comparison.of(change)
        if not rows:
            continue
        if change == "missing":  # a run of some cases (--case, --tag): compared on what both ran, the rest named
            out += _one_sided(comparison, rows)
            continue
        out.append(f"{HEADINGS[change]} ({len(rows)}):")
        for row in rows:
            out.append(
                f"  {MARKS[change]} {row.label}: {row.counts}" + (f"; {_figures(row)}" if change != "missing" else "")
            )
            several = len(row.pairs) > 1
            for p in row.pairs:
                if change == "missing" or (p.first is None and p.change == "same"):
                    continue
                lead = f"    #{p.attempt} {MARKS[p.change]} " if several else "    "
                out.append(lead + (p.first.line() if p.first is not None else "the same steps"))
                if p.change == "regression" and p.right is not None:
                    out += [f"        {_cut(line, 200)}" for line in p.right.failures[:failures]]
    out.append("Summary: " + comparison.summary())
    return "\n".join(out)
