"""Eval runs in the store (table ``eval_runs``): written by ``bot eval``, read by the web console (runs, pass rates
over time, a failing trial's timeline).

A run is written as ``bot eval`` redacted it, and read through the redaction step again (rows written before a
kind of secret was known, or before results were redacted at all, are shown redacted too)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.evals.results import RunResult, redacted
from bot.store.ports import EvalRepo


@dataclass(frozen=True)
class RunLine:
    """A run as a list shows it (without its whole result)."""

    id: str
    suite: str
    models: str
    status: str
    cases: int
    trials: int
    passed: int
    pass_rate: float
    cost: float
    started_at: datetime


def _line(row: tuple[Any, ...]) -> RunLine:
    started = row[9] if isinstance(row[9], datetime) else datetime.fromisoformat(str(row[9]))
    return RunLine(
        str(row[0]),
        str(row[1]),
        str(row[2]),
        str(row[3]),
        int(row[4]),
        int(row[5]),
        int(row[6]),
        float(row[7]),
        float(row[8]),
        started,
    )


async def save_run(runs: EvalRepo, result: RunResult) -> None:
    figures = result.summary()
    line = (
        result.id,
        result.suite,
        ", ".join(result.models)[:255],
        figures["status"],
        figures["cases"],
        figures["trials"],
        figures["passed"],
        figures["pass_rate"],
        figures["cost"],
        result.started_at.replace(tzinfo=None),
    )
    await runs.add(line, redacted(result).model_dump_json())


async def recent_runs(runs: EvalRepo, suite: str | None = None, limit: int = 50) -> list[RunLine]:
    """The newest runs first (of one suite, or of all)."""
    return [_line(r) for r in await runs.recent(suite, limit)]


async def load_run(runs: EvalRepo, run_id: str) -> RunResult | None:
    data = await runs.data(run_id)
    return redacted(RunResult.model_validate_json(data)) if data is not None else None


async def last_run(runs: EvalRepo, suite: str, before: RunResult) -> RunResult | None:
    """The suite's run before ``before``."""
    data = await runs.previous(suite, before.id, before.started_at)
    return redacted(RunResult.model_validate_json(data)) if data is not None else None
