"""``bot eval SUITE.yaml``: run a suite of conversations through the real supervisor and check each turn
(``bot/evals``); ``bot eval --from-traces --since 7d --agent NAME``: replay real conversations; ``bot eval
--compare RUN [RUN]``: saved runs side by side (``bot/cli/eval_compare.py``).

Exit codes: 0 the pass rate reached ``--min-pass``; 1 it did not (or nothing to run); 2 a suite or settings that
cannot be used (a suite setting what only ``--trust-suite`` allows, too many trials); 128 + the signal when
stopped by SIGTERM or SIGINT (the run's temporary folder removed, nothing saved).

Everything printed or written of a run (the progress lines, the report, ``--json``, ``--out``, ``--junit``, the
file in ``data_dir/evals`` and the store's ``eval_runs``) has been through the redaction step.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import yaml

from bot.cli import eval_cache
from bot.cli.eval_saved import baseline, evals_folder, save, stored_previous
from bot.cli.eval_setup import configured_label, unjudged, unknown_selection, unwritable
from bot.cli.settings import ConfigOpt, cli_settings
from bot.config.settings import ConfigError, Settings, load_settings
from channels.terminal import terminal_safe

T = TypeVar("T")
MAX_CONCURRENCY = 64


def eval_command(
    suite_file: Annotated[Path | None, typer.Argument(metavar="SUITE", help="The suite file (YAML).")] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", "-m", help="offline, scripted or provider/name (again, or comma-separated, for several)."
        ),
    ] = None,
    models: Annotated[str, typer.Option("--models", help="Several models, comma-separated.")] = "",
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, max=MAX_CONCURRENCY, help="Trials at once.")
    ] = 4,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, max=100, help="Run each case N times (pass rate per case), up to 100.")
    ] = 1,
    budget: Annotated[
        float | None, typer.Option("--budget", min=0, help="Start no more trials once the estimated cost reaches this.")
    ] = None,
    min_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--min-pass", help="Exit 1 when a model's pass rate is below RATE (0-1; MODEL=RATE for one). Default 1."
        ),
    ] = None,
    case_min: Annotated[
        int | None, typer.Option("--case-min", min=1, help="Exit 1 when a case passes fewer than K of its repeats.")
    ] = None,
    fail_on_regression: Annotated[
        str | None,
        typer.Option("--fail-on-regression", help="Exit 1 when a case that passed in this run (an id, or last) fails."),
    ] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="The model that scores judge: checks.")] = None,
    junit_file: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the results (JSON) here too.")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", help="Only this case (again for more).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only cases with this tag.")] = None,
    from_traces: Annotated[
        bool, typer.Option("--from-traces", help="Make the cases from recorded conversations.")
    ] = False,
    since: Annotated[str, typer.Option("--since", help="With --from-traces: how far back (30m, 12h, 7d).")] = "7d",
    gap: Annotated[
        str, typer.Option("--gap", help="With --from-traces: a chat idle this long begins a new case (30m, 2h).")
    ] = "30m",
    agent: Annotated[
        str | None, typer.Option("--agent", help="With --from-traces: conversations this agent took part in.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="With --from-traces: at most this many chats.")] = 50,
    write: Annotated[
        Path | None, typer.Option("--write", help="With --from-traces: save the cases as a suite.")
    ] = None,
    keep: Annotated[Path | None, typer.Option("--keep", help="Keep each trial's store and workspace here.")] = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not record the run in the store.")] = False,
    cache: Annotated[
        bool,
        typer.Option("--cache/--no-cache", help="Answer a model call from an earlier run's answer to the same call."),
    ] = True,
    record: Annotated[
        Path | None, typer.Option("--record", metavar="FILE", help="Write every model call's answer to a cassette.")
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option("--replay", metavar="FILE", help="Answer every model call from a cassette (no network, no key)."),
    ] = None,
    clear_cache: Annotated[
        bool, typer.Option("--clear-cache", help="Remove the cached answers (then run the suite, if one is given).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    schema: Annotated[bool, typer.Option("--schema", help="Print the suite file's JSON schema and exit.")] = False,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            metavar="RUN [RUN]",
            help="Saved runs side by side (an id, last or previous; the first is the baseline), or one run's models;"
            " no model is called.",
        ),
    ] = None,
    trust_suite: Annotated[
        bool,
        typer.Option(
            "--trust-suite",
            help="Let the suite set the model, secrets, URLs, sandboxes and folders (only for a suite you trust).",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run an eval suite through the real supervisor (a fresh store per case) and check each turn."""
    from bot.evals.suite import SuiteError, suite_json_schema

    if schema:
        typer.echo(json.dumps(suite_json_schema(), indent=2, ensure_ascii=False))
        return
    if compare is not None:  # the second run, if any, is where a suite file would be: --compare RUN RUN
        from bot.cli.eval_compare import compare_command

        second = str(suite_file) if suite_file is not None else None
        raise typer.Exit(compare_command(cli_settings(config), compare, second, as_json))
    settings = cli_settings(config)
    _logging(settings)
    from bot.redaction import Redaction

    redaction = Redaction(
        [*settings.secrets(), *Redaction.configured(settings.model, settings.channels, settings.mcp).secrets]
    )
    if clear_cache:
        eval_cache.clear(settings)
        if suite_file is None and not from_traces:
            return
    if (suite_file is None) == (not from_traces):
        typer.echo("give a suite file, or --from-traces (not both)", err=True)
        raise typer.Exit(2)
    try:
        if from_traces:
            suite = asyncio.run(_from_traces(settings, since, agent, limit, write, gap))
        else:
            from bot.evals.suite import load_suite

            assert suite_file is not None
            suite = load_suite(suite_file)
    except (SuiteError, ValueError) as exc:
        typer.echo(redaction.text(str(exc)), err=True)
        raise typer.Exit(2) from None
    if suite is None:
        raise typer.Exit(1)
    unknown = unknown_selection(suite, case or [], tag or [])
    if unknown:
        typer.echo(unknown, err=True)
        raise typer.Exit(2)
    if case or tag:
        suite = suite.select(case, tag)
        if not suite.cases:
            typer.echo("no case has both that id and that tag", err=True)
            raise typer.Exit(2)
    for flag, path in (("--out", out), ("--junit", junit_file)):
        problem = unwritable(path)
        if problem is not None:  # said before the suite runs (and is paid for), not after
            typer.echo(f"{flag} {path}: {problem}", err=True)
            raise typer.Exit(2)
    names = [m.strip() for spec in [*(model or []), models] for m in spec.split(",") if m.strip()]
    tested = names or list(suite.models) or [configured_label(settings)]
    problem = unjudged(suite, judge, tested)
    if problem:
        typer.echo(problem, err=True)
        raise typer.Exit(2)
    from bot.evals.gates import GateError, Gates

    try:
        gates = Gates.parse(min_pass or [], case_min)
        gates.check_models(tested)
        if fail_on_regression is not None:
            gates.baseline = baseline(settings, suite.name, fail_on_regression)
    except GateError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    answers = eval_cache.cache_flags(cache, record, replay)
    base_dir = suite_file.parent if suite_file is not None else Path.cwd()
    source = str(suite_file) if suite_file is not None else f"traces since {since}"
    if trust_suite:
        from bot.evals.trust import guarded

        for setting in guarded(suite, base_dir):
            typer.echo(setting.warning(), err=True)
    work = _run(
        settings,
        config,
        suite,
        names,
        base_dir,
        source,
        concurrency,
        repeat,
        budget,
        judge,
        keep,
        as_json,
        trust_suite,
        answers,
    )
    try:
        result, changes = asyncio.run(_until_signalled(work))
    except _Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        typer.echo(f"stopped by {name}: nothing saved; the run's temporary folder was removed", err=True)
        raise typer.Exit(128 + stopped.signum) from None
    from bot.evals.results import redacted

    result = redacted(result, redaction)
    unsaved = save(settings, result, out, junit_file, no_store) + eval_cache.write_cassette(answers)
    if as_json:
        typer.echo(terminal_safe(result.model_dump_json(indent=1)))
    else:
        from bot.evals.report import report

        typer.echo(terminal_safe(report(result, changes, every_case=False)))
    for line in unsaved:  # after the summary, so a file that could not be written does not hide it
        typer.echo(line, err=True)
    if unsaved:
        raise typer.Exit(2)
    broken = gates.broken(result)
    for line in broken:
        typer.echo(f"gate: {line}", err=True)
    raise typer.Exit(1 if broken else 0)


def _logging(settings: Settings) -> None:
    from bot.cli.logs import setup_logging

    file = settings.store.data_dir.expanduser() / "eval.log"
    try:
        setup_logging(settings.log.level, settings.secrets(), file=file, terminal_level="ERROR")
    except OSError:
        setup_logging("ERROR", settings.secrets())


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        self.signum = signum


async def _until_signalled(work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result; on SIGTERM or SIGINT it is cancelled (each trial stops its gateway, the run's temporary
    folder is removed) and :class:`_Stopped` raised; a second signal ends the process at once (the next run
    sweeps what it left)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    got: list[int] = []

    def stop(signum: int) -> None:
        if got:
            os._exit(128 + signum)
        got.append(signum)
        task.cancel()

    added = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop, sig)
            added.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            pass
    try:
        return await task
    except asyncio.CancelledError:
        if got:
            raise _Stopped(got[0]) from None
        raise
    finally:
        for sig in added:
            loop.remove_signal_handler(sig)


async def _from_traces(
    settings: Settings, since: str, agent: str | None, limit: int, write: Path | None, gap: str = "30m"
) -> Any:
    from bot.clock import SYSTEM_CLOCK
    from bot.evals.traces import TraceCases, seconds_of
    from bot.store.base import StoreError
    from bot.store.sql import store_from_settings
    from bot.store.sql.repos.evals import SqlReplaySource
    from bot.store.sql.repos.traces import SqlTraces
    from bot.tracing.recorder import Redactor

    start = SYSTEM_CLOCK.utcnow() - timedelta(seconds=seconds_of(since))
    store = store_from_settings(settings.store, read_only=True)
    try:
        await store.start()
    except StoreError as exc:
        typer.echo(f"cannot read the traces: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        redactor = Redactor.configured(settings.model, settings.channels, settings.mcp)
        maker = TraceCases(SqlTraces(store), SqlReplaySource(store), redactor, gap=seconds_of(gap))
        suite = await maker.suite(start, agent, limit)
    finally:
        await store.close()
    for note in maker.notes:
        typer.echo(f"note: {note}", err=True)
    if suite is None:
        about = f" with {agent}" if agent else ""
        typer.echo(f"no recorded conversation{about} since {since} (are traces on? tracing.enabled)", err=True)
        return None
    typer.echo(f"{len(suite.cases)} conversations made into cases", err=True)
    if write is not None:
        data = suite.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        write.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
        typer.echo(f"cases written to {write}", err=True)
    return suite


async def _run(
    settings: Settings,
    config: Path | None,
    suite: Any,
    names: list[str],
    base_dir: Path,
    source: str,
    concurrency: int,
    repeat: int,
    budget: float | None,
    judge: str | None,
    keep: Path | None,
    quiet: bool,
    trust_suite: bool = False,
    answers: eval_cache.CacheFlags | None = None,
) -> tuple[Any, list[str] | None]:
    from bot.evals.models import choose
    from bot.evals.report import trial_line
    from bot.evals.results import TrialResult, diff, previous_run
    from bot.evals.runner import EvalOptions, run_suite
    from bot.evals.trust import Refused
    from bot.gateway.app import Gateway

    def progress(trial: TrialResult) -> None:
        if not quiet:
            typer.echo(terminal_safe(trial_line(trial)))

    try:
        chosen = [choose(name) for name in names]
    except ConfigError as exc:
        typer.echo(f"--model: {exc}", err=True)
        raise typer.Exit(2) from None
    options = EvalOptions(
        models=chosen,
        repeat=repeat,
        concurrency=concurrency,
        budget=budget,
        judge=judge,
        keep=keep,
        on_trial=progress,
        source=source,
        trust_suite=trust_suite,
        **(answers.options() if answers is not None else {}),
    )

    def settings_for(overrides: dict[str, Any]) -> Settings:
        return load_settings(config, overrides=overrides)

    try:
        result = await run_suite(suite, settings_for, options, base_dir, gateway=Gateway)
    except Refused as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    except ConfigError as exc:
        typer.echo(f"config error: {exc}", err=True)
        raise typer.Exit(2) from None
    before = await stored_previous(settings, result) or previous_run(evals_folder(settings), suite.name, result)
    return result, diff(before, result) if before is not None else None
