"""Datasets (``vars:``): a case template filled from rows (a CSV or JSONL file in the suite's folder, or inline),
one case per row, the values inserted as text; every mistake is the suite's, with the suite's line and the row's."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli.eval_setup import unknown_selection
from bot.evals.datasets import MAX_ROWS
from bot.evals.models import choose
from bot.evals.runner import MAX_TRIALS, EvalOptions, Runner, SettingsSource, TooLarge, run_suite
from bot.evals.suite import SuiteError, load_suite, parse_suite
from bot.gateway.app import Gateway
from tests.evals.cli import bot_eval

INLINE = """name: rows
config: {routing: {strategy: rule, rule: {meaning: false}}}
cases:
  - id: time-in
    description: the time in {{city}}
    vars:
      - {city: Tokyo, tz: Asia/Tokyo, n: 2}
      - {city: "{{tz}}", tz: Europe/Paris, n: true}
    files: {"{{city}}.txt": "n={{ n }}"}
    script:
      - {call: get_current_time, args: {timezone: "{{tz}}"}}
      - "It is noon in {{city}}."
    turns:
      - user: "@react what time is it in {{city}}?"
        expect:
          tool: {name: get_current_time, args: {timezone: "{{tz}}"}}
          answer: "noon in {{city}}"
  - id: plain
    script: ["hi {{city}}"]
    turns: [{user: "@chat hi {{city}}", expect: {answer: "hi {{city}}"}}]
"""


def test_each_row_makes_a_case_its_values_inserted_as_text() -> None:
    suite = parse_suite(INLINE)
    assert [c.id for c in suite.cases] == ["time-in-1", "time-in-2", "plain"]
    tokyo, paris, plain = suite.cases
    assert tokyo.description == "the time in Tokyo" and tokyo.files == {"Tokyo.txt": "n=2"}
    assert tokyo.turns[0].user == "@react what time is it in Tokyo?"
    assert tokyo.turns[0].expect.tool[0].args == {"timezone": "Asia/Tokyo"}
    assert tokyo.script is not None and tokyo.script[0].args == {"timezone": "Asia/Tokyo"}
    # A value holding a placeholder is text: not filled again; true is the text "true".
    assert paris.turns[0].user == "@react what time is it in {{tz}}?" and paris.files == {"{{tz}}.txt": "n=true"}
    assert paris.vars is None and paris.vars_id is None
    assert plain.turns[0].user == "@chat hi {{city}}", "a case without vars is not filled"
    # --case: a template's id picks all of its rows, a row's case id that case alone.
    assert [c.id for c in suite.select(["time-in"]).cases] == ["time-in-1", "time-in-2"]
    assert [c.id for c in suite.select(["time-in-2", "plain"]).cases] == ["time-in-2", "plain"]
    assert unknown_selection(suite, ["time-in"], []) is None
    assert "(it has: time-in, time-in-1, time-in-2, plain)" in (unknown_selection(suite, ["time-out"], []) or "")


async def test_the_rows_cases_run(settings_source: Callable[..., SettingsSource]) -> None:
    suite = parse_suite(INLINE).select(["time-in-1"])
    result = await run_suite(suite, settings_source(), EvalOptions(models=[choose("scripted")]), gateway=Gateway)
    assert [(t.case, t.passed) for t in result.trials] == [("time-in-1", True)], result.trials[0].failures()
    assert result.trials[0].turns[0].tools[0].args == {"timezone": "Asia/Tokyo"}


def _suite(tmp_path: Path, case: str, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(text, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: data\ncases:\n{case}", encoding="utf-8")
    return path


CASE = """  - id: city
    vars: {file}
    vars_id: {column}
    turns:
      - user: what time is it in {{{{city}}}}?
        expect: {{tool: {{name: get_current_time, args: {{timezone: "{{{{tz}}}}"}}}}}}
"""


def test_a_csv_file_and_a_jsonl_file_with_an_id_column(tmp_path: Path) -> None:
    csv_ = 'city,tz\nTokyo,Asia/Tokyo\n\n"São Paulo",America/Sao_Paulo\n"New\nYork",America/New_York\n'
    suite = load_suite(_suite(tmp_path, CASE.format(file="c.csv", column="city"), c_csv=csv_))
    assert [c.id for c in suite.cases] == ["city-Tokyo", "city-Sao-Paulo", "city-New-York"]
    assert suite.cases[1].turns[0].user == "what time is it in São Paulo?"
    jsonl = '{"city": "Oslo", "tz": "Europe/Oslo"}\n\n{"city": "Lima", "tz": "America/Lima"}\n'
    suite = load_suite(_suite(tmp_path, CASE.format(file="c.jsonl", column="city"), c_jsonl=jsonl))
    assert [c.id for c in suite.cases] == ["city-Oslo", "city-Lima"]


def _problems(tmp_path: Path, case: str, **files: str) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(_suite(tmp_path, case, **files))
    return caught.value.problems


def test_every_mistake_is_the_suites_with_its_lines(tmp_path: Path) -> None:
    # A placeholder a row has no column for (with a did-you-mean), a column no placeholder uses.
    case = CASE.format(file="c.csv", column="city").replace("{{tz}}", "{{tzz}}")
    assert _problems(tmp_path, case, c_csv="city,tz,extra\nTokyo,Asia/Tokyo,x\n") == [
        "line 4: cases[0].vars: column 'extra' (c.csv line 2) is used by no {{extra}} in the case's turns, files, "
        "script or description (leave it out of the data, or use it)",
        "line 4: cases[0].vars: column 'tz' (c.csv line 2) is used by no {{tz}} in the case's turns, files, script "
        "or description (leave it out of the data, or use it)",
        "line 8: cases[0].turns[0].expect.tool.args.timezone: {{tzz}}: row 1 (c.csv line 2) has no 'tzz' (its "
        "columns: city, tz, extra); did you mean {{tz}}?",
    ]
    case = CASE.format(file="c.csv", column="city")
    # A malformed line, an empty file, a header alone, a broken quote.
    assert _problems(tmp_path, case, c_csv="city,tz\nTokyo\nOslo,Europe/Oslo\n") == [
        "line 4: cases[0].vars: c.csv line 2: 1 value for 2 columns (city, tz)"
    ]
    assert _problems(tmp_path, case, c_csv="") == ["line 4: cases[0].vars: c.csv has no rows"]
    assert _problems(tmp_path, case, c_csv="city,tz\n") == ["line 4: cases[0].vars: c.csv has no rows (only a header)"]
    assert _problems(tmp_path, case, c_csv='city,tz\n"Tokyo,Asia/Tokyo\n') == [
        "line 4: cases[0].vars: c.csv line 2: not CSV (unexpected end of data)"
    ]
    jsonl = '{"city": "Oslo", "tz": "Europe/Oslo"}\n{"city": "Lima",}\n[1]\n{"city": "Rome", "tz": {"a": 1}}\n'
    assert _problems(tmp_path, case.replace("c.csv", "c.jsonl"), c_jsonl=jsonl) == [
        "line 4: cases[0].vars: c.jsonl line 2: not JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 17 (char 16))",
        'line 4: cases[0].vars: c.jsonl line 3: a row is a JSON object ({"column": value, …})',
        "line 4: cases[0].vars: c.jsonl line 4: 'tz' is not a plain value (text, number, true/false, null)",
    ]
    # A row without a column (the id's too), two rows naming one case.
    jsonl = '{"city": "Oslo", "tz": "a"}\n{"tz": "b"}\n'
    assert _problems(tmp_path, case.replace("c.csv", "c.jsonl"), c_jsonl=jsonl) == [
        "line 5: cases[0].vars_id: 'city': row 2 (c.jsonl line 2) has no such column (its columns: tz)",
        "line 7: cases[0].turns[0].user: {{city}}: row 2 (c.jsonl line 2) has no 'city' (its columns: tz)",
    ]
    jsonl = '{"city": "Oslo", "tz": "a"}\n{"city": "Lima", "tz": "b"}\n{"tz": "c", "city": "Oslo!"}\n'
    assert _problems(tmp_path, case.replace("c.csv", "c.jsonl"), c_jsonl=jsonl) == [
        "line 4: cases[0].vars: row 1 (c.jsonl line 1) and row 3 (c.jsonl line 3) both make the case 'city-Oslo'"
    ]
    # What a row's value makes is checked as the case: a path out of the workspace, an id another case has, a
    # regular expression that is none, a file to attach that is not there.
    inline = """  - id: f
    vars: [{name: a}, {name: ../up}]
    files: {"{{name}}.txt": x}
    turns: [{user: hi, attach: "{{name}}.txt", expect: {answer: {matches: "{{name}}"}}}]
  - id: f-1
    turns: [{user: hi}]
"""
    (tmp_path / "a.txt").write_text("x")
    assert _problems(tmp_path, inline.replace("name: a}", "name: a(}")) == [
        "line 5: cases[0].files: '../up.txt': a path inside the workspace (row 2, line 4)",
        "line 6: cases[0].turns[0].expect.answer: not a regular expression (missing ), unterminated subpattern at "
        "position 1) (row 1, line 4)",
    ]
    assert _problems(tmp_path, inline.replace("../up", "b").replace("f-1", "g")) == [
        "line 6: cases[0].turns[0].attach[0]: 'b.txt': there is no such file in the suite's folder "
        f"({tmp_path.resolve()}) (row 2, line 4)"
    ]
    assert _problems(tmp_path, inline.replace("../up", "b").replace('attach: "{{name}}.txt", ', "")) == [
        "line 3: cases[0].id: a row makes the case 'f-1', and another case has that id"
    ]


def test_a_data_file_stays_in_the_suites_folder_and_within_bounds(tmp_path: Path) -> None:
    if os.name != "posix":
        pytest.skip("symbolic links")
    outside = tmp_path / "outside.csv"
    outside.write_text("city,tz\nTokyo,Asia/Tokyo\n")
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "link.csv").symlink_to(outside)
    for name, why in (
        ("../outside.csv", "leaves the suite's folder"),
        ("link.csv", "is a link to a file outside the suite's folder"),
        ("gone.csv", "there is no such file"),
        ("c.txt", "rows come from a .csv or .jsonl file"),
    ):
        [problem] = _problems(folder, CASE.format(file=name, column="city"))
        assert problem.startswith("line 4: cases[0].vars: ") and why in problem, problem
    many = "city,tz\n" + "".join(f"c{n},tz{n}\n" for n in range(MAX_ROWS + 5))
    [problem] = _problems(folder, CASE.format(file="c.csv", column="city"), c_csv=many)
    assert (
        problem == f"line 4: cases[0].vars: more than {MAX_ROWS:,} rows; a case has at most {MAX_ROWS:,} (split them)"
    )
    with pytest.raises(SuiteError, match="vars_id goes with vars"):
        parse_suite("name: x\ncases:\n  - id: a\n    vars_id: city\n    turns: [{user: hi}]\n")


def test_the_rows_count_in_the_runs_trials(tmp_path: Path, settings_source: Callable[..., SettingsSource]) -> None:
    rows = "city,tz\n" + "".join(f"c{n},tz{n}\n" for n in range(MAX_ROWS))
    suite = load_suite(_suite(tmp_path, CASE.format(file="c.csv", column="city"), c_csv=rows))
    assert len(suite.cases) == MAX_ROWS
    runner = Runner(suite, settings_source(), EvalOptions(repeat=MAX_TRIALS // MAX_ROWS + 1), tmp_path, Gateway)
    with pytest.raises(TooLarge, match=f"^{MAX_ROWS} cases × 1 models"):
        runner.check(1)


def test_bot_eval_exits_2_on_a_bad_data_file_before_any_model_call(tmp_path: Path) -> None:
    path = _suite(tmp_path, CASE.format(file="c.csv", column="city"), c_csv="city\nTokyo\n")
    done = bot_eval(tmp_path, str(path), "--model", "offline")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "line 8: cases[0].turns[0].expect.tool.args.timezone: {{tz}}: row 1 (c.csv line 2) has no 'tz'" in (
        done.stderr
    )
    assert not (tmp_path / "data" / "evals").exists(), "nothing was run or saved"
