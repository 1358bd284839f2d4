"""The gates a release is held on: a pass rate per model, k of n per case, no regression against a baseline run;
each broken one named, bad gates refused before the run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.main import app
from bot.evals.gates import GateError, Gates
from bot.evals.results import RunResult, TrialResult

ROOT = Path(__file__).resolve().parents[2]


def run(*trials: tuple[str, str, bool], id: str = "now") -> RunResult:
    models = list(dict.fromkeys(m for _, m, _ in trials))
    made = [TrialResult(case=c, model=m, passed=p) for c, m, p in trials]
    return RunResult(id=id, suite="s", started_at=datetime.now(UTC), models=models, trials=made)


def test_each_gate_names_what_broke_it() -> None:
    result = run(("a", "A", True), ("b", "A", True), ("a", "B", True), ("b", "B", False), ("b", "B", True))
    assert Gates.parse(["0.5"]).broken(result) == []  # the run as a whole: 4/5; B alone 2/3
    assert Gates.parse(["0.9"]).broken(result) == ["B: pass rate 67% is below 90% (--min-pass)"]
    assert Gates.parse(["0.5", "A=1", "B=0.7"]).broken(result) == ["B: pass rate 67% is below 70% (--min-pass)"]
    assert Gates.parse(["0"], case_min=2).broken(result) == ["b [B]: 1/2 passed, fewer than 2 (--case-min)"]
    baseline = run(("a", "A", True), ("b", "A", True), ("b", "B", True), id="base")
    gates = Gates.parse(["0"])
    gates.baseline = baseline
    assert gates.broken(result) == ["b [B]: passed in run base, 1/2 now (--fail-on-regression)"]
    with pytest.raises(GateError, match="between 0 and 1"):
        Gates.parse(["1.5"])
    with pytest.raises(GateError, match="the run tests A, B"):
        Gates.parse(["C=0.5"]).check_models(["A", "B"])


def test_bad_gates_exit_2_before_the_run(tmp_path: Path) -> None:
    config = tmp_path / "bot.yaml"
    config.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "data")}}))
    suite = str(ROOT / "evals" / "builtin.yaml")
    base = ["eval", suite, "--model", "offline", "--case", "time-in-a-city", "-c", str(config)]
    wrong_model = CliRunner().invoke(app, [*base, "--min-pass", "gemini/x=0.9"])
    assert wrong_model.exit_code == 2 and "the run tests offline" in wrong_model.output
    no_baseline = CliRunner().invoke(app, [*base, "--fail-on-regression", "last"])
    assert no_baseline.exit_code == 2 and "no saved run of suite builtin" in no_baseline.output
    first = CliRunner().invoke(app, [*base, "--repeat", "2", "--case-min", "2", "--min-pass", "offline=1"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*base, "--fail-on-regression", "last"])
    assert again.exit_code == 0, again.output
