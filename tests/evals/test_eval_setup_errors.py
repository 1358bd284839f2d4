"""Set-up mistakes of ``bot eval`` exit 2 before any model call, naming what is wrong (CI tells them from a
regression); a results file that cannot be written after a paid run is said after the summary, and the run is
still stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
SUITE = str(ROOT / "evals" / "builtin.yaml")


def config(tmp_path: Path) -> str:
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump({"store": {"data_dir": str(tmp_path / "data")}}))
    return str(path)


def test_a_case_or_tag_the_suite_lacks_is_named_with_a_did_you_mean(tmp_path: Path) -> None:
    runner = CliRunner()
    typo = runner.invoke(app, ["eval", SUITE, "--model", "offline", "--case", "time-in-a-cty", "-c", config(tmp_path)])
    assert typo.exit_code == 2, typo.output
    assert "--case 'time-in-a-cty': no such case in the suite; did you mean 'time-in-a-city'?" in typo.output
    tag = runner.invoke(app, ["eval", SUITE, "--model", "offline", "--tag", "nope", "-c", config(tmp_path)])
    assert tag.exit_code == 2 and "--tag 'nope': no such tag in the suite" in tag.output
    assert "approvals" in tag.output  # the tags it has
    assert not (tmp_path / "data" / "evals").exists(), "nothing ran"


def test_an_unwritable_junit_path_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    flags = ["eval", SUITE, "--model", "offline", "--junit", str(tmp_path / "a-file" / "junit.xml")]
    result = CliRunner().invoke(app, [*flags, "-c", config(tmp_path)])
    assert result.exit_code == 2 and f"--junit {tmp_path / 'a-file' / 'junit.xml'}: " in result.output
    assert "is not a folder" in result.output and not (tmp_path / "data" / "evals").exists()


def test_a_file_not_written_after_the_run_leaves_the_summary_and_the_stored_run(tmp_path: Path) -> None:
    settings = config(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "evals").write_text("")  # the results folder cannot be made
    flags = ["eval", SUITE, "--model", "offline", "--case", "time-in-a-city", "--out", str(tmp_path / "r.json")]
    result = CliRunner().invoke(app, [*flags, "-c", settings])
    assert result.exit_code == 2, result.output
    assert "1/1 passed" in result.output  # the summary
    assert f"results {tmp_path / 'data' / 'evals'}: not written" in result.output
    assert (tmp_path / "r.json").is_file()  # the other file was written
    with sqlite3.connect(tmp_path / "data" / "bot.db") as db:
        assert db.execute("SELECT suite, passed FROM eval_runs").fetchall() == [("builtin", 1)]


def test_a_mistyped_provider_is_refused_before_the_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", SUITE, "--model", "opnai/gpt-4o-mini", "-c", config(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "no provider 'opnai'; did you mean openai/gpt-4o-mini?" in result.output
    assert not (tmp_path / "data" / "evals").exists()


def test_judge_checks_no_model_can_score_are_a_set_up_error(tmp_path: Path) -> None:
    suite = tmp_path / "judged.yaml"
    suite.write_text(
        "name: judged\ncases:\n  - id: polite\n    turns:\n      - user: hello\n"
        "        expect: {judge: The answer greets the person}\n  - id: plain\n    turns:\n"
        "      - user: hello\n        expect: {status: done}\n"
    )
    for flags in (["--model", "offline"], ["--model", "offline", "--judge", "offline"]):
        result = CliRunner().invoke(app, ["eval", str(suite), *flags, "-c", config(tmp_path)])
        assert result.exit_code == 2, result.output
        assert "1 case(s) have judge: checks no model can score (polite)" in result.output
    assert not (tmp_path / "data" / "evals").exists(), "nothing ran"
    left_out = CliRunner().invoke(
        app, ["eval", str(suite), "--model", "offline", "--case", "plain", "-c", config(tmp_path)]
    )
    assert left_out.exit_code == 0, left_out.output


def test_a_model_without_its_key_a_bad_config_and_a_missing_agents_folder_exit_2_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    keyless = CliRunner().invoke(app, ["eval", SUITE, "--model", "gemini/gemini-2.5-flash", "-c", config(tmp_path)])
    assert keyless.exit_code == 2, keyless.output
    assert "model gemini/gemini-2.5-flash: Gemini needs a key" in keyless.output
    suite = tmp_path / "bad.yaml"
    suite.write_text(
        "name: bad\nagents: [no-such-folder]\nconfig: {routing: {strategy: sideways}}\n"
        "cases:\n  - id: one\n    turns:\n      - user: hello\n        expect: {status: done}\n"
    )
    bad = CliRunner().invoke(app, ["eval", str(suite), "--model", "offline", "-c", config(tmp_path)])
    assert bad.exit_code == 2, bad.output
    assert "the suite cannot run as it is set up (nothing was run)" in bad.output
    assert f"agents: {tmp_path / 'no-such-folder'} is not a folder" in bad.output
    assert "config (offline):" in bad.output and "routing.strategy" in bad.output
    assert not (tmp_path / "data" / "evals").exists()


def test_a_tool_name_no_tool_has_is_refused_with_a_did_you_mean(tmp_path: Path) -> None:
    suite = tmp_path / "tools.yaml"
    suite.write_text(
        "name: tools\ncases:\n  - id: one\n    turns:\n      - user: write hello to notes.txt\n"
        "        expect: {no_tool: [wirte_file], tool: [mcp.files.read, read_file]}\n"
    )
    result = CliRunner().invoke(app, ["eval", str(suite), "--model", "offline", "-c", config(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "case one, turn 1: no tool is named 'wirte_file'; did you mean 'write_file'?" in result.output
    assert "mcp.files.read" not in result.output and "'read_file'" not in result.output


def test_a_choice_the_prompt_lacks_lists_the_choices_it_has(tmp_path: Path) -> None:
    suite = tmp_path / "press.yaml"
    suite.write_text(
        "name: press\nconfig: {agents: {dirs: []}}\ncases:\n  - id: plan\n    turns:\n"
        "      - user: plan a weekend trip to Paris\n        expect: {interrupt: plan_approval}\n"
        "      - choice: zz\n        expect: {status: done}\n"
        "      - user: thanks\n        expect: {status: done, answer: welcome, notice: [a, b]}\n"
    )
    out = tmp_path / "out.json"
    flags = ["eval", str(suite), "--model", "offline", "--no-store", "--out", str(out)]
    result = CliRunner().invoke(app, [*flags, "-c", config(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "the prompt has no button with choice 'zz' (it has 'approve' (" in result.output, result.output
    # Its checks count as not held (not left out of the total), and the case goes on: the next turn is played.
    [trial] = json.loads(out.read_text())["trials"]
    pressed, last = trial["turns"][1:]
    assert [(c["check"], c["passed"]) for c in pressed["checks"]] == [("status", False)]
    assert pressed["checks"][0]["seen"].startswith("not played: the prompt has no button with choice 'zz'")
    assert [c["check"] for c in last["checks"]] == ["answer", "notice", "notice", "status"]
    assert not any(c["seen"].startswith("not played") for c in last["checks"]), last
