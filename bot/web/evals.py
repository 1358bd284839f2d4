"""What the web console's Evals pages read: ``bot eval`` runs (newest first), each suite's pass rate over its runs
drawn as a small SVG (rendered here, no script), one run's cases per model with a failing trial's failed
checks and timeline, its case × model grid, and side by side views (:mod:`bot.evals.compare`): two models of a
run, or two runs of a suite (the earlier one the baseline)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from bot.evals.compare import CaseRow, Change, Comparison, compare_models, compare_runs
from bot.evals.report import event_from
from bot.evals.results import RunResult, Totals
from bot.evals.store import RunLine, load_run, recent_runs
from bot.store.ports import EvalRepo
from bot.web.data import ago, timeline

RUNS = 100
TREND_RUNS = 30
WIDTH, HEIGHT, PAD = 260, 56, 6


@dataclass
class Trend:
    suite: str
    last: RunLine
    runs: int
    svg: str


@dataclass
class CaseLine:
    case: str
    model: str
    passed: int
    trials: int
    figures: Totals
    failures: list[str] = field(default_factory=list)
    timeline: list[dict[str, str]] = field(default_factory=list)


def trend_svg(lines: list[RunLine]) -> str:
    """The pass rates of ``lines`` (oldest first) as a line from 0 % to 100 %, a dot per run with its figures."""
    n = len(lines)
    step = (WIDTH - 2 * PAD) / max(1, n - 1)

    def point(i: int, rate: float) -> tuple[float, float]:
        return PAD + i * step if n > 1 else WIDTH / 2, PAD + (1 - rate) * (HEIGHT - 2 * PAD)

    points = [point(i, line.pass_rate) for i, line in enumerate(lines)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trend" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="pass rate over the last {n} runs">',
        f'<line x1="{PAD}" y1="{PAD}" x2="{WIDTH - PAD}" y2="{PAD}" stroke="#dde1e8"/>',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#dde1e8"/>',
    ]
    if n > 1:
        drawn = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(f'<polyline points="{drawn}" fill="none" stroke="#2457c5" stroke-width="1.6"/>')
    for (x, y), line in zip(points, lines, strict=True):
        colour = "#1c7c43" if line.status == "passed" else "#b3261e"
        when = f"{line.started_at:%Y-%m-%d %H:%M}"
        said = f"{when}: {line.passed}/{line.trials} passed ({line.pass_rate:.0%}), {line.models}"
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{html.escape(said)}</title></circle>'
        )
    parts.append("</svg>")
    return "".join(parts)


async def overview(runs: EvalRepo) -> tuple[list[dict[str, Any]], list[Trend]]:
    """The newest runs (as table rows) and each suite's trend."""
    lines = await recent_runs(runs, limit=RUNS)
    rows = [{"line": line, "ago": ago(line.started_at)} for line in lines]
    trends = []
    for suite in dict.fromkeys(line.suite for line in lines):
        mine = [line for line in lines if line.suite == suite][:TREND_RUNS]
        trends.append(Trend(suite, mine[0], len(mine), trend_svg(list(reversed(mine)))))
    return rows, trends


async def run_view(runs: EvalRepo, run_id: str) -> tuple[RunResult, list[CaseLine]] | None:
    """One run and its cases per model; a failing case carries its first failing trial's checks and timeline."""
    result = await load_run(runs, run_id)
    if result is None:
        return None
    cases = []
    for (case, model), figures in result.by_case().items():
        trials = [t for t in result.trials if (t.case, t.model) == (case, model)]
        line = CaseLine(case, model, figures.passed, figures.trials, figures)
        failed = next((t for t in trials if not t.passed and not t.skipped), None)
        if failed is not None:
            line.failures = failed.failures()
            line.timeline = timeline([event_from(e) for e in failed.events])
        elif any(t.skipped for t in trials):
            line.failures = [f"not run: {next(t.skipped for t in trials if t.skipped)}"]
        cases.append(line)
    cases.sort(key=lambda c: (c.passed == c.trials, c.case, c.model))
    return result, cases


@dataclass
class Cell:
    model: str
    passed: int
    trials: int
    change: Change | None = None
    """Against the baseline model (None: this is the baseline, or the case did not run for one of them)."""


@dataclass
class GridRow:
    case: str
    cells: list[Cell]


def grid(result: RunResult) -> tuple[list[str], list[GridRow]]:
    """Case × model: each cell's passes, marked against the run's first model (the baseline)."""
    comparison = compare_models(result)
    marks = {(r.case, r.right_model): r.change for r in comparison.rows}
    figures = result.by_case()
    rows = []
    for case in dict.fromkeys(t.case for t in result.trials):
        cells = []
        for model in result.models:
            found = figures.get((case, model))
            ran = found.trials - found.skipped if found is not None else 0
            change = marks.get((case, model))
            cells.append(Cell(model, found.passed if found else 0, ran, None if change == "missing" else change))
        rows.append(GridRow(case, cells))
    return result.models, rows


async def others(runs: EvalRepo, result: RunResult) -> list[RunLine]:
    """The suite's other runs, newest first (to compare with)."""
    return [line for line in await recent_runs(runs, result.suite, RUNS) if line.id != result.id]


async def models_side(
    runs: EvalRepo, run_id: str, case: str, left: str, right: str
) -> tuple[RunResult, CaseRow] | None:
    """A case of run ``run_id`` played by ``left`` and ``right``, attempt by attempt (None: no such run or case)."""
    result = await load_run(runs, run_id)
    if result is None or left not in result.models or right not in result.models or left == right:
        return None
    row = next((r for r in compare_models(result, left, [right]).rows if r.case == case), None)
    return (result, row) if row is not None and row.pairs else None


async def versus(runs: EvalRepo, run_id: str, other_id: str) -> tuple[RunResult, RunResult, Comparison] | None:
    """Two runs of one suite compared, the earlier one the baseline (None: either missing, or another suite)."""
    one, two = await load_run(runs, run_id), await load_run(runs, other_id)
    if one is None or two is None or one.suite != two.suite or one.id == two.id:
        return None
    before, after = sorted((one, two), key=lambda r: r.started_at)
    return before, after, compare_runs(before, after)
