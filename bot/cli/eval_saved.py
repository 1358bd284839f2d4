"""Where ``bot eval`` keeps its runs: the JSON files in ``data_dir/evals`` (and ``--out``, ``--junit``) and the
store's ``eval_runs``; the saved run a new one is compared with (``--fail-on-regression``, the diff)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from bot.config.settings import Settings


def evals_folder(settings: Settings) -> Path:
    return settings.store.data_dir.expanduser() / "evals"


def baseline(settings: Settings, suite: str, run: str) -> Any:
    """The run ``--fail-on-regression`` compares with: by id, or ``last`` (the suite's newest saved run)."""
    from bot.evals.gates import GateError
    from bot.evals.results import RunResult, previous_run

    folder = evals_folder(settings)
    if run == "last":
        found = previous_run(folder, suite)
    else:
        found = None
        for path in folder.glob(f"{suite}-*.json"):
            try:
                candidate = RunResult.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if candidate.id == run:
                found = candidate
    if found is None:
        raise GateError(f"--fail-on-regression {run}: no saved run of suite {suite} in {folder} has that id")
    return found


async def stored_previous(settings: Settings, result: Any) -> Any:
    from bot.evals.store import last_run
    from bot.store.base import StoreError
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.evals import SqlEvalRuns

    store = store_from_settings(settings.store, read_only=True)
    try:
        await store.start()
    except StoreError:
        return None
    try:
        return await last_run(SqlEvalRuns(store), result.suite, result)
    except Exception:  # a database from before eval runs were stored: nothing to compare with there
        return None
    finally:
        await store.close()


def save(settings: Settings, result: Any, out: Path | None, junit_file: Path | None, no_store: bool) -> list[str]:
    """Store the run and write its files; a file that cannot be written is said (returned), not a traceback: the
    run was paid for, so the rest is still saved and the summary printed."""
    from bot.evals.report import junit
    from bot.evals.results import save_json

    if not no_store:
        asyncio.run(store(settings, result))
    failed = []
    writes: list[tuple[str, Path | None, Any]] = [
        ("results", evals_folder(settings), None),
        ("--out", out, lambda: result.model_dump_json(indent=1)),
        ("--junit", junit_file, lambda: junit(result)),
    ]
    for what, path, text in writes:
        if path is None:
            continue
        try:
            if text is None:
                typer.echo(f"results: {save_json(result, path)}", err=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text(), encoding="utf-8")
        except OSError as exc:
            failed.append(f"{what} {path}: not written ({exc.strerror or exc}); the run is stored and summarised")
    return failed


async def store(settings: Settings, result: Any) -> None:
    from bot.evals.store import save_run
    from bot.store.base import StoreError
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.evals import SqlEvalRuns

    store = store_from_settings(settings.store, secrets=settings.secrets())
    try:
        await store.start()
        await save_run(SqlEvalRuns(store), result)
    except StoreError as exc:
        typer.echo(f"the run was not recorded in the store ({exc}); its results are in the file", err=True)
    finally:
        await store.close()
