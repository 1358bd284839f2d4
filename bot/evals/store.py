"""Eval runs in the store (table ``eval_runs``): written by ``bot eval``, read by the web console (runs, pass rates
over time, a failing trial's timeline)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.evals.results import RunResult
from bot.store.ops import Step
from bot.store.sql import SqlStore

COLUMNS = "id, suite, models, status, cases, trials, passed, pass_rate, cost, started_at"


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


async def save_run(store: SqlStore, result: RunResult) -> None:
    figures = result.summary()
    started = result.started_at.replace(tzinfo=None)
    step = Step(
        f"INSERT INTO eval_runs ({COLUMNS}, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            result.id,
            result.suite,
            ", ".join(result.models)[:255],
            figures["status"],
            figures["cases"],
            figures["trials"],
            figures["passed"],
            figures["pass_rate"],
            figures["cost"],
            started,
            result.model_dump_json(),
        ),
    )
    await store.write([step])


async def recent_runs(store: SqlStore, suite: str | None = None, limit: int = 50) -> list[RunLine]:
    """The newest runs first (of one suite, or of all)."""
    where, params = ("WHERE suite = ? ", (suite,)) if suite else ("", ())
    rows = await store.read(
        f"SELECT {COLUMNS} FROM eval_runs {where}ORDER BY started_at DESC LIMIT ?", (*params, limit)
    )
    return [_line(r) for r in rows]


async def load_run(store: SqlStore, run_id: str) -> RunResult | None:
    rows = await store.read("SELECT data FROM eval_runs WHERE id = ?", (run_id,))
    return RunResult.model_validate_json(str(rows[0][0])) if rows else None


async def last_run(store: SqlStore, suite: str, before: RunResult) -> RunResult | None:
    """The suite's run before ``before``."""
    rows = await store.read(
        "SELECT data FROM eval_runs WHERE suite = ? AND id <> ? AND started_at <= ? ORDER BY started_at DESC LIMIT 1",
        (suite, before.id, before.started_at.replace(tzinfo=None)),
    )
    return RunResult.model_validate_json(str(rows[0][0])) if rows else None
