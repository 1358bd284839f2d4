"""``bot eval --compare RUN [RUN]``: saved runs side by side (:mod:`bot.evals.compare`), read from
``data_dir/evals``; no model is called and no suite file is read.

A run is named by its id (the whole one, or the 8 characters its file name ends with), its file name, ``last``
(the newest saved run) or ``previous`` (the run of the same suite before ``last``).  Two runs: the first is the
baseline.  One run: with several models, its models side by side (the first model is the baseline); with one
model, the suite's saved run before it is the baseline.  Exit 0 once compared; 2 for a run that is not saved (with
a did-you-mean over the saved ones) or a single-model run with no earlier run of its suite.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import typer

from bot.cli.eval_saved import evals_folder
from bot.config.settings import Settings
from channels.terminal import terminal_safe

FILE = re.compile(r"^(?P<suite>.+)-(?P<time>\d{8}T\d{6})-(?P<id>[^-]+)$")


class UnknownRun(ValueError):
    pass


@dataclass(frozen=True)
class Saved:
    path: Path
    suite: str
    time: str
    short: str


def saved_runs(folder: Path) -> list[Saved]:
    """The runs saved in ``folder`` as their file names tell (oldest first; the files are not read)."""
    found = []
    for path in folder.glob("*.json"):
        match = FILE.match(path.stem)
        if match is not None:
            found.append(Saved(path, match["suite"], match["time"], match["id"]))
    return sorted(found, key=lambda s: (s.time, s.path.name))


def find(saved: list[Saved], name: str, folder: Path) -> Saved:
    """The saved run ``name`` names; :class:`UnknownRun` (with a did-you-mean) when none does."""
    if not saved:
        raise UnknownRun(f"--compare {name}: no run is saved in {folder} yet (bot eval SUITE saves one there)")
    if name in ("last", "previous"):
        newest = saved[-1]
        if name == "last":
            return newest
        before = [s for s in saved[:-1] if s.suite == newest.suite]
        if not before:
            raise UnknownRun(f"--compare previous: suite {newest.suite} has one saved run ({newest.short})")
        return before[-1]
    stem = name.removesuffix(".json")
    for s in reversed(saved):
        if stem in (s.path.stem, s.short) or (len(stem) > len(s.short) and stem.endswith(s.short)):
            return s
    names = [s.short for s in saved] + [s.path.stem for s in saved]
    close = difflib.get_close_matches(stem, names, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    listed = ", ".join(f"{s.short} ({s.suite} {s.time})" for s in reversed(saved[-5:]))
    raise UnknownRun(f"--compare {name}: no saved run has that id{hint}; the newest: {listed}, or last / previous")


def compare_command(settings: Settings, first: str, second: str | None, as_json: bool) -> int:
    """Print the comparison; the exit code."""
    from bot.evals.compare import compare_models, compare_runs, short, text
    from bot.evals.results import RunResult, redacted
    from bot.redaction import Redaction

    folder = evals_folder(settings)
    saved = saved_runs(folder)
    redaction = Redaction(
        [*settings.secrets(), *Redaction.configured(settings.model, settings.channels, settings.mcp).secrets]
    )

    def load(s: Saved) -> RunResult:
        try:
            run = RunResult.model_validate_json(s.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UnknownRun(f"--compare: {s.path} cannot be read ({str(exc).splitlines()[0]})") from None
        return redacted(run, redaction)  # saved redacted; again for secrets known since

    try:
        left = load(find(saved, first, folder))
        if second is not None:
            right = load(find(saved, second, folder))
            comparison = compare_runs(left, right)
            if left.suite != right.suite:
                typer.echo(
                    f"note: runs of two suites ({left.suite}, {right.suite}): compared on shared cases", err=True
                )
        elif len(left.models) > 1:
            comparison = compare_models(left)
        else:
            earlier = [s for s in saved if s.suite == left.suite and s.time < left.started_at.strftime("%Y%m%dT%H%M%S")]
            if not earlier:
                raise UnknownRun(
                    f"--compare {first}: run {short(left.id)} has one model and no earlier run of suite {left.suite}"
                    " is saved: give two runs (--compare RUN RUN)"
                )
            comparison = compare_runs(load(earlier[-1]), left)
    except UnknownRun as exc:
        typer.echo(terminal_safe(redaction.text(str(exc))), err=True)
        return 2
    typer.echo(terminal_safe(comparison.model_dump_json(indent=1) if as_json else text(comparison)))
    return 0
