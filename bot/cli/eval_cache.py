"""``bot eval``'s recorded answers on the command line: ``--cache/--no-cache`` (on by default), ``--record FILE``
(a cassette of every model call of the run), ``--replay FILE`` (answered from a cassette only: no network, no
key), ``--clear-cache``.  Combinations that make no sense, and a cassette that cannot be read or a ``--record``
path that cannot be written, exit 2 before any model is called."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from bot.cli.eval_setup import unwritable
from bot.config.settings import Settings


@dataclass
class CacheFlags:
    cache: bool = True
    record_path: Path | None = None
    record: Any = None
    """The cassette being recorded (:class:`bot.evals.answers.Cassette`), written after the run."""
    replay: Any = None
    """The cassette replayed."""

    def options(self) -> dict[str, Any]:
        """The :class:`bot.evals.runner.EvalOptions` fields these set."""
        return {"cache": self.cache, "record": self.record, "replay": self.replay}


def cache_folder_of(settings: Settings) -> Path:
    from bot.evals.answers import cache_folder

    return cache_folder(settings.store.data_dir.expanduser())


def clear(settings: Settings) -> None:
    """``--clear-cache``: the cache's answers removed (said on stderr)."""
    from bot.evals.answers import clear_cache

    folder = cache_folder_of(settings)
    removed = clear_cache(folder)
    typer.echo(f"eval cache cleared: {removed} answers removed ({folder})", err=True)


def cache_flags(cache: bool, record: Path | None, replay: Path | None) -> CacheFlags:
    """The flags checked (exit 2 with what is wrong), the cassette to replay read."""
    from bot.evals.answers import Cassette, CassetteError

    if record is not None and replay is not None:
        typer.echo(
            "--record and --replay together: a replay answers from its cassette only, so there is nothing new to "
            "record (to record again, run with --record alone)",
            err=True,
        )
        raise typer.Exit(2)
    problem = unwritable(record)
    if problem is not None:
        typer.echo(f"--record {record}: {problem}", err=True)
        raise typer.Exit(2)
    flags = CacheFlags(cache=cache and replay is None, record_path=record)
    if record is not None:
        flags.record = Cassette()
    if replay is not None:
        try:
            flags.replay = Cassette.load(replay)
        except CassetteError as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(2) from None
    return flags


def write_cassette(flags: CacheFlags | None) -> list[str]:
    """Write the recorded cassette; what could not be written (said after the summary, exit 2)."""
    if flags is None or flags.record is None or flags.record_path is None:
        return []
    try:
        flags.record.write(flags.record_path)
    except OSError as exc:
        return [f"--record {flags.record_path}: not written ({exc.strerror or exc})"]
    typer.echo(f"cassette: {len(flags.record.entries)} answers written to {flags.record_path}", err=True)
    return []
