"""The suite format: short forms read as their long ones, every problem reported at once with its line and a
did-you-mean, and the JSON schema shipped for editors is the one the command checks with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.evals.suite import SuiteError, load_suite, parse_suite, suite_json_schema

ROOT = Path(__file__).resolve().parents[2]


def test_short_forms_read_as_the_long_ones() -> None:
    suite = parse_suite(
        """
name: short
cases:
  - id: one
    script: ["hello", {call: get_current_time, args: {timezone: UTC}}]
    turns:
      - user: hi
        expect:
          tool: get_current_time
          answer: hello
          interrupt: tool_confirm
          handoff: code-fixer
          judge: friendly
          notice: routed
      - press: Approve
        expect: {handoff: false, interrupt: false, answer: [a, b]}
"""
    )
    first, second = suite.cases[0].turns
    assert [t.name for t in first.expect.tool] == ["get_current_time"] and first.expect.tool[0].match == "subset"
    assert first.expect.answer is not None and first.expect.answer.contains == ["hello"]
    assert first.expect.interrupt is not False and first.expect.interrupt is not None
    assert first.expect.interrupt.kind == "tool_confirm"
    assert [h.to for h in first.expect.handoff or []] == ["code-fixer"]
    assert [j.rubric for j in first.expect.judge] == ["friendly"] and first.expect.notice == ["routed"]
    assert second.expect.handoff is False and second.expect.interrupt is False
    assert second.expect.answer is not None and second.expect.answer.contains == ["a", "b"]
    script = suite.cases[0].script or []
    assert script[0].text == "hello" and script[1].call == "get_current_time"


def test_every_problem_is_named_with_its_line_and_a_did_you_mean() -> None:
    text = """name: typos
cases:
  - id: one
    turns:
      - user: hello
        expect:
          agnet: chat
          tool: {nam: get_current_time}
          interrupt: tool_confrim
          answer: {contain: x}
      - user: 42
"""
    with pytest.raises(SuiteError) as caught:
        parse_suite(text, "typos.yaml")
    assert caught.value.problems == [
        "line 7: cases[0].turns[0].expect: unknown key 'agnet' (did you mean 'agent'?); known: agent, answer, "
        "check, exact_tools, files, handoff, interrupt, judge, latency_ms, memory, no_tool, notice, pairwise, "
        "status, tool",
        "line 8: cases[0].turns[0].expect.tool: unknown key 'nam' (did you mean 'name'?); known: args, match, "
        "name, times",
        "line 9: cases[0].turns[0].expect.interrupt: 'tool_confrim' is not one of 'tool_confirm', "
        "'plan_approval', 'ask_user', false (did you mean 'tool_confirm'?)",
        "line 10: cases[0].turns[0].expect.answer: unknown key 'contain' (did you mean 'contains'?); known: "
        "contains, equals, ignore_case, matches, not_contains, schema, similar, threshold",
        "line 11: cases[0].turns[1].user: 42 is not null or string (YAML read it as int: put it in quotes)",
    ]
    assert str(caught.value).startswith("typos.yaml: invalid suite:")


def test_what_the_schema_cannot_say_is_said_after_it() -> None:
    text = """name: rules
cases:
  - id: same
    files: {../outside.txt: x}
    turns: [{user: a, press: b}]
  - id: same
    turns:
      - user: x
        expect: {tool: {name: t, args: {a: "("}, match: regex}, answer: {matches: "["}}
"""
    with pytest.raises(SuiteError) as caught:
        parse_suite(text)
    problems = "\n".join(caught.value.problems)
    assert "cases[0].files: '../outside.txt': a path inside the workspace" in problems
    assert "a turn is one of user, press or choice (it has user, press)" in problems
    assert "args.a: not a regular expression" in problems
    assert "answer: not a regular expression" in problems
    with pytest.raises(SuiteError) as twice:
        parse_suite("name: x\ncases:\n  - {id: same, turns: [{user: a}]}\n  - {id: same, turns: [{user: b}]}\n")
    assert twice.value.problems == ["line 3: cases: two cases are named 'same'"]


def test_a_file_that_is_not_a_suite() -> None:
    for text, problem in (
        ("name: [x", "line 1: invalid YAML"),
        ("- a list", "a suite is a mapping"),
        ("name: x\ncases: []\n", "line 2: cases: [] should be non-empty"),
    ):
        with pytest.raises(SuiteError) as caught:
            parse_suite(text)
        assert caught.value.problems[0].startswith(problem), caught.value.problems


def test_the_shipped_schema_is_current_and_the_example_suite_fits_it() -> None:
    shipped = json.loads((ROOT / "evals" / "suite.schema.json").read_text())
    assert shipped == suite_json_schema(), "regenerate: bot eval --schema > evals/suite.schema.json"
    suite = load_suite(ROOT / "evals" / "builtin.yaml")
    assert len(suite.cases) >= 8 and len({c.id for c in suite.cases}) == len(suite.cases)


def test_the_readmes_example_suite_is_valid() -> None:
    readme = (ROOT / "docs" / "evaluations.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# evals/support\.yaml.*?)```", readme, re.DOTALL)
    assert block is not None
    suite = parse_suite(block.group(1))
    assert [t.press or t.user for t in suite.cases[0].turns] == ["write hello to notes.txt", "Approve"]
