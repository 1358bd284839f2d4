"""An eval run for people and for CI: the terminal report (per case and per model, a failing trial with its
failed checks and its trace, the changes since the last run) and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime
from typing import Any

from bot.evals.pairs import pairwise_lines
from bot.evals.results import RunResult, Totals, TrialResult
from bot.tracing.event import TraceEvent
from bot.tracing.timeline import describe, human_duration


def event_from(data: dict[str, Any]) -> TraceEvent:
    """A trace event kept in a result (:meth:`TraceEvent.as_dict`) as the event again."""
    fields = {"id", "type", "at", "chat_key", "correlation_id", "run_id", "agent"}
    return TraceEvent(
        type=str(data.get("type", "")),
        chat_key=str(data.get("chat_key", "")),
        correlation_id=str(data.get("correlation_id", "")),
        run_id=str(data.get("run_id", "")),
        agent=str(data.get("agent", "")),
        data={k: v for k, v in data.items() if k not in fields},
        at=datetime.fromisoformat(str(data["at"])),
        id=str(data.get("id", "")),
    )


def trace_lines(trial: TrialResult, indent: str = "      ") -> list[str]:
    """The trial's trace, a line per event with its time from the start."""
    events = [event_from(e) for e in trial.events]
    if not events:
        return []
    start = events[0].at
    return [f"{indent}+{human_duration((e.at - start).total_seconds() * 1000):>7}  {describe(e)}" for e in events]


def figures(totals: Totals) -> str:
    checks = f"{totals.checks_passed}/{totals.checks} checks"
    cached = f" ({totals.cached_calls} from cache)" if totals.cached_calls else ""
    return (
        f"{checks}, {totals.model_calls} model calls{cached}, "
        f"{totals.input_tokens:,} → {totals.output_tokens:,} tokens, {totals.tool_calls} tool calls, "
        f"${totals.cost:.4f}, median turn {totals.latency_ms_p50:.0f} ms"
    )


def trial_line(trial: TrialResult) -> str:
    """One line per trial as it ends (progress)."""
    mark = "–" if trial.skipped else ("✓" if trial.passed else "✗")
    where = f"{trial.case} [{trial.model}]" + (f" #{trial.attempt}" if trial.attempt > 1 else "")
    if trial.skipped:
        return f"  {mark} {where}: not run ({trial.skipped})"
    if trial.error and not trial.turns:
        return f"  {mark} {where}: {trial.error}"
    return f"  {mark} {where}: {figures(Totals.of([trial]))}"


def report(result: RunResult, changes: list[str] | None = None, *, traces: bool = True, every_case: bool = True) -> str:
    """The run: a line per case and model (``every_case``; else only the failing ones, after progress lines
    listed them all), a failing trial's failed checks and trace, the totals per model, the changes."""
    totals = result.totals
    took = (result.finished_at - result.started_at).total_seconds() if result.finished_at else 0.0
    cases = len({t.case for t in result.trials})
    out = [
        f"Suite {result.suite}: {cases} cases × {', '.join(result.models)}"
        + (f", repeated {result.repeat}×" if result.repeat > 1 else "")
        + f" — {totals.passed}/{totals.trials} passed ({totals.pass_rate:.0%}) in {took:.1f} s"
    ]
    by_case = result.by_case()
    for (case, model), figures_of in by_case.items():
        trials = [t for t in result.trials if (t.case, t.model) == (case, model)]
        mark = "✓" if figures_of.passed == figures_of.trials else ("–" if figures_of.skipped else "✗")
        rate = f" {figures_of.passed}/{figures_of.trials} passed," if figures_of.trials > 1 else ""
        failed = [t for t in trials if not t.passed and not t.skipped]
        if every_case or failed:
            out.append(f"  {mark} {case} [{model}]:{rate} {figures(figures_of)}")
        if failed:
            first = failed[0]
            label = f"    #{first.attempt} " if len(trials) > 1 else "    "
            out += [f"{label}{line}" for line in first.failures()]
            if traces and first.events:
                out += ["    trace:", *trace_lines(first)]
    out.append("Per model:")
    for model, model_totals in result.by_model().items():
        skipped = sum(1 for t in result.trials for c in t.all_checks if t.model == model and c.passed is None)
        note = f" ({skipped} judge checks skipped)" if skipped else ""
        judge = f", judge ${model_totals.judge_cost:.4f}" if model_totals.judge_cost else ""
        judge += f", {model_totals.judge_cached} judge calls from cache" if model_totals.judge_cached else ""
        judge += f", simulator ${model_totals.simulator_cost:.4f}" if model_totals.simulator_cost else ""
        out.append(
            f"  {model}: {model_totals.passed}/{model_totals.trials} passed ({model_totals.pass_rate:.0%}), "
            f"{figures(model_totals)}{judge}{note}"
        )
    out += pairwise_lines(result.pairwise)
    if result.stopped:
        out.append(f"Stopped: {result.stopped}; {totals.skipped} trials not run.")
    if changes is not None:
        out.append("Since the last run: " + ("no change" if not changes else ""))
        out += [f"  {line}" for line in changes]
    return "\n".join(out)


def junit(result: RunResult) -> str:
    """JUnit XML: a test suite per model, a test case per trial (a failure lists its failed checks)."""
    root = ET.Element("testsuites", name=result.suite, tests=str(len(result.trials)))
    failures_total = errors_total = 0
    for model in result.models:
        trials = [t for t in result.trials if t.model == model]
        errored = [t for t in trials if t.errored is not None]
        failed = [t for t in trials if not t.passed and not t.skipped and t.errored is None]
        skipped = [t for t in trials if t.skipped]
        failures_total += len(failed)
        errors_total += len(errored)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{result.suite}[{model}]",
            tests=str(len(trials)),
            failures=str(len(failed)),
            errors=str(len(errored)),
            skipped=str(len(skipped)),
            time=f"{sum(t.duration_ms for t in trials) / 1000:.3f}",
            timestamp=result.started_at.isoformat(timespec="seconds"),
        )
        for trial in trials:
            name = trial.case + (f" #{trial.attempt}" if result.repeat > 1 else "")
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{result.suite}.{model}",
                name=name,
                time=f"{trial.duration_ms / 1000:.3f}",
            )
            if trial.skipped:
                ET.SubElement(case, "skipped", message=trial.skipped)
            elif not trial.passed:
                lines = trial.failures()
                reason = trial.errored
                element, kind = ("error", "error") if reason is not None else ("failure", "eval")
                failure = ET.SubElement(case, element, message=reason or (lines[0] if lines else "failed"), type=kind)
                failure.text = "\n".join([*lines, "", *trace_lines(trial, indent="")])
            totals = Totals.of([trial])
            out = ET.SubElement(case, "system-out")
            out.text = figures(totals)
    root.set("failures", str(failures_total))
    root.set("errors", str(errors_total))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
