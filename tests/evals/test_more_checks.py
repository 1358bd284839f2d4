"""The checks people expect beside the structural ones: a turn's latency and a case's latency and cost, Python
checks of the suite's folder given the transcript (refused unless the suite is trusted; one that does not load
is a set-up error), and an answer's meaning by the sentence encoder routing uses."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.evals.case_checks import check_case
from bot.evals.models import ModelChoice, choose
from bot.evals.preflight import BadSetUp
from bot.evals.pycheck import Transcript
from bot.evals.results import CheckResult, RunResult, TrialResult, TurnResult
from bot.evals.runner import EvalOptions, SettingsSource, run_suite
from bot.evals.similar import DEFAULT_THRESHOLD, pieces
from bot.evals.suite import SuiteError, parse_suite
from bot.evals.trust import UntrustedSuite
from bot.gateway.app import Gateway

from .cli import bot_eval

SCRIPT = """
    script:
      - {call: get_current_time, args: {timezone: Europe/Paris}, usage: {input_tokens: 100, output_tokens: 10}}
      - {text: "It is noon in Paris right now.", usage: {input_tokens: 150, output_tokens: 20}}
"""
PRICES = {"budgets": {"prices": {"scripted": {"input": 1000, "output": 1000}}}}
"""$1,000 per million tokens: the scripted case's 250 + 30 tokens cost $0.28."""
BY_NAME = {"routing": {"rule": {"meaning": False}}}
"""Cases that name their agent (``@react``) need no sentence encoder."""


async def run(source: SettingsSource, text: str, base_dir: Path, **options: Any) -> RunResult:
    options.setdefault("models", [choose("scripted")])
    return await run_suite(parse_suite(text), source, EvalOptions(**options), base_dir, gateway=Gateway)


def by_kind(checks: list[CheckResult]) -> dict[str, list[tuple[bool | None, str]]]:
    out: dict[str, list[tuple[bool | None, str]]] = {}
    for c in checks:
        out.setdefault(c.check, []).append((c.passed, c.seen))
    return out


async def test_latency_and_cost_within_and_over_their_limits(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    case = """
  - id: {id}
    max_cost: {cost}
    max_latency_ms: {case_ms}
{script}
    turns:
      - user: "@react what time is it in Paris?"
        expect: {{latency_ms: {turn_ms}}}
"""
    text = "name: limits\ncases:" + case.format(id="within", cost=1, case_ms=600_000, turn_ms=600_000, script=SCRIPT)
    text += case.format(id="over", cost=0.1, case_ms=0, turn_ms=0, script=SCRIPT)
    result = await run(settings_source(**PRICES, **BY_NAME), text, tmp_path)
    within, over = result.trials
    assert within.passed, within.failures()
    assert round(within.cost, 6) == 0.28
    assert by_kind(within.checks)["max_cost"] == [(True, "$0.280000")]
    assert not over.passed and over.errored is None, "over a limit is a failure, not an error"
    failed = {c.check: (c.expected, c.seen) for c in over.all_checks if c.passed is False}
    assert failed["max_cost"] == ("the case costs ≤ $0.1", "$0.280000")
    assert failed["max_latency_ms"][0] == "the case's turns take ≤ 0 ms" and failed["max_latency_ms"][1].endswith(" ms")
    assert failed["latency_ms"][0] == "≤ 0 ms"
    assert set(failed) == {"max_cost", "max_latency_ms", "latency_ms"}


async def test_a_cost_without_a_price_is_not_checked(tmp_path: Path) -> None:
    """A model that answered without a price (an agent file's own model, a judge): the check says so, not passed;
    the offline and scripted models need none."""
    suite = parse_suite("name: p\ncases:\n  - id: c\n    max_cost: 1\n    turns: [{user: hi}]\n")
    trial = TrialResult(case="c", model="openai/model-b", turns=[TurnResult(index=1, action="user: hi")])
    seen = Transcript(index=1, user="hi", answer="")

    async def checked(models: list[str]) -> CheckResult:
        [check] = await check_case(
            suite.cases[0], trial, [seen], base_dir=tmp_path, models=models, priced=lambda m: m == "model-a"
        )
        return check

    unpriced = await checked(["model-a", "model-b"])
    assert (unpriced.passed, unpriced.seen) == (False, "no price for model model-b: cannot check cost")
    assert (await checked(["model-a", "scripted", "offline"])).passed


async def test_a_model_under_test_without_a_price_is_a_set_up_error(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    suite = parse_suite("name: p\ncases:\n  - id: costly\n    max_cost: 0.01\n    turns: [{user: hi}]\n")
    with pytest.raises(BadSetUp) as refused:
        options = EvalOptions(models=[choose("openai/gpt-4.1-mini")])
        await run_suite(suite, settings_source(), options, tmp_path, gateway=Gateway)
    assert "model openai/gpt-4.1-mini: no price in budgets.prices, so max_cost cannot be checked" in str(refused.value)


CHECKS_PY = """
import asyncio
from helpers import PARIS  # a neighbour in the suite's folder


def says_paris(t):
    return PARIS in t.answer and t.tools[0].name == "get_current_time" and t.agent == "react"


def tuple_reason(t):
    return False, f"no Tokyo in {t.answer!r}"


def text_reason(t):
    return "too chatty"


def asserts(t):
    assert t.status == "failed", f"status was {t.status}"


async def waits(t):
    await asyncio.sleep(0)
    return (True, "async held")


def breaks(t):
    raise ValueError("bad input")


def nothing(t):
    pass


def whole_case(t):
    earlier = t.earlier[0]
    return t.index == 2 and earlier.user == "@react what time is it in Paris?" and t.user == "@chat thanks"
"""


def trusted_folder(tmp_path: Path) -> Path:
    (tmp_path / "checks.py").write_text(CHECKS_PY)
    (tmp_path / "helpers.py").write_text("PARIS = 'Paris'\n")
    return tmp_path


CODE_SUITE = f"""name: code
cases:
  - id: code
{SCRIPT}      - "You are welcome."
    check: checks:whole_case
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          check: [checks:says_paris, checks:tuple_reason, checks:text_reason, checks:asserts, checks:waits,
                  checks:breaks, checks:nothing]
      - user: "@chat thanks"
"""


async def test_python_checks_get_the_transcript(settings_source: Callable[..., SettingsSource], tmp_path: Path) -> None:
    folder = trusted_folder(tmp_path)
    result = await run(settings_source(**BY_NAME), CODE_SUITE, folder, trust_suite=True)
    [trial] = result.trials
    got = [(c.expected, c.passed, c.seen, c.error) for c in trial.turns[0].checks]
    assert got == [
        ("checks:says_paris holds", True, "held", False),
        ("checks:tuple_reason holds", False, "no Tokyo in 'It is noon in Paris right now.'", False),
        ("checks:text_reason holds", False, "too chatty", False),
        ("checks:asserts holds", False, "status was done", False),
        ("checks:waits holds", True, "async held", False),
        ("checks:breaks holds", False, "error: ValueError: bad input", True),
        (
            "checks:nothing holds",
            False,
            "error: it returned None (no return); a check returns true, false, (bool, reason) or a reason",
            True,
        ),
    ]
    assert [(c.check, c.passed) for c in trial.checks] == [("check", True), ("script", True)]
    assert trial.errored == "check: checks:breaks holds: error: ValueError: bad input", "an error, not a failure"
    assert "Traceback" not in trial.model_dump_json()
    assert "helpers" not in __import__("sys").modules, "the suite's folder was on sys.path for the import only"


async def test_python_checks_are_refused_unless_the_suite_is_trusted(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    folder = trusted_folder(tmp_path)
    with pytest.raises(UntrustedSuite) as refused:
        await run(settings_source(), CODE_SUITE, folder)
    message = str(refused.value)
    assert (
        "  cases[0].turns[0].expect.check (line 13): Python code of the suite's folder (checks:says_paris)" in message
    )
    assert "  cases[0].check (line 9): Python code of the suite's folder (checks:whole_case)" in message
    assert not (folder / "__pycache__").exists(), "nothing of the suite was imported"


async def test_a_check_that_does_not_load_is_a_set_up_error(
    settings_source: Callable[..., SettingsSource], tmp_path: Path
) -> None:
    folder = trusted_folder(tmp_path)
    (folder / "broken.py").write_text("import no_such_module_here\n")
    text = """name: typos
cases:
  - id: c
    script: [hi]
    turns:
      - user: hi
        expect: {check: [checks:says_pari, chekcs:says_paris, broken:f, sub/x.py:f]}
"""
    never = ModelChoice("never", make=lambda case: pytest.fail("no model is made"))
    with pytest.raises(BadSetUp) as refused:
        await run(settings_source(), text, folder, trust_suite=True, models=[never])
    problems = str(refused.value).splitlines()[1:]
    where = "  case c, turn 1, check "
    assert problems == [
        f"{where}checks:says_pari (line 7): checks has no function 'says_pari'; did you mean checks:says_paris? "
        "(its functions: asserts, breaks, nothing, says_paris, text_reason, tuple_reason, waits, whole_case)",
        f"{where}chekcs:says_paris (line 7): no module 'chekcs' in the suite's folder ({folder.resolve()}: no "
        "chekcs.py); did you mean 'checks'?",
        f"{where}broken:f (line 7): broken does not import: ModuleNotFoundError: No module named 'no_such_module_here'",
        f"{where}sub/x.py:f (line 7): no module 'sub/x.py' in the suite's folder ({folder.resolve()}: no sub/x.py)",
    ]


def test_the_command_warns_of_trusted_code_and_refuses_a_misspelt_check(tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    folder = trusted_folder(tmp_path / "suite")
    (folder / "s.yaml").write_text(
        "name: s\ncases:\n  - id: c\n    script: [hi]\n    turns:\n"
        "      - user: hi\n        expect: {check: checks:says_pars}\n"
    )
    run = bot_eval(tmp_path, str(folder / "s.yaml"), "--model", "scripted", "--trust-suite", timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        "WARNING: --trust-suite: the suite sets cases[0].turns[0].expect.check (line 7) = 'checks:says_pars' "
        "(Python code of the suite's folder (checks:says_pars), run in this process)" in run.stderr
    )
    assert "case c, turn 1, check checks:says_pars (line 7): checks has no function 'says_pars'; did you mean " in (
        run.stderr
    )
    assert "Traceback" not in run.stderr and not (tmp_path / "data" / "evals").exists()


async def test_an_answer_similar_in_meaning(settings_source: Callable[..., SettingsSource], tmp_path: Path) -> None:
    text = f"""name: meaning
cases:
  - id: similar
{SCRIPT}
    turns:
      - user: "@react what time is it in Paris?"
        expect:
          answer:
            similar: ["The time in Paris is 12:00.", "I wrote hello to notes.txt."]
  - id: no-encoder
    config: {{routing: {{rule: {{encoder: nosuch}}}}}}
    script: [hi]
    turns:
      - user: "@chat hi"
        expect: {{answer: {{similar: hello, threshold: 0.1}}}}
"""
    result = await run(settings_source(), text, tmp_path)
    similar, no_encoder = result.trials
    paraphrase, unrelated = similar.turns[0].checks
    assert (
        paraphrase.passed and paraphrase.expected == f"similar to 'The time in Paris is 12:00.' ≥ {DEFAULT_THRESHOLD:g}"
    )
    assert not unrelated.passed and unrelated.seen.endswith("of the answer 'It is noon in Paris right now.'")
    score = float(paraphrase.seen.split()[1])
    assert score >= DEFAULT_THRESHOLD > float(unrelated.seen.split()[1])
    [error] = no_encoder.turns[0].checks
    assert (error.passed, error.error) == (False, True)
    assert error.seen.startswith("error: the sentence encoder 'nosuch' could not be used (ValueError: unknown encoder")


def test_the_new_checks_in_the_file_format() -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(
            textwrap.dedent("""\
            name: typos
            cases:
              - id: c
                max_cots: 1
                turns:
                  - user: hi
                    expect: {latency_ms: -1, check: "not a check", answer: {simlar: x}}
                  - user: hi
                    expect: {answer: {contains: x, threshold: 0.5}}
            """)
        )
    problems = caught.value.problems
    assert problems[0].startswith("line 4: cases[0]: unknown key 'max_cots' (did you mean 'max_cost'?)")
    assert any(
        p.startswith("line 7: cases[0].turns[0].expect.answer: unknown key 'simlar' (did you mean 'similar'")
        for p in problems
    )
    assert "line 7: cases[0].turns[0].expect.check: 'not a check' is not module:function" in "\n".join(problems)
    assert any(
        p.startswith("line 7: cases[0].turns[0].expect.latency_ms: -1 is less than the minimum") for p in problems
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(
            "name: t\ncases:\n  - id: c\n    turns: [{user: hi, expect: {answer: {contains: x, threshold: 0.5}}}]\n"
        )
    assert caught.value.problems == ["line 4: cases[0].turns[0].expect.answer: threshold goes with similar"]
    long = " ".join(f"word{n}" for n in range(300))
    cut = pieces(long)
    assert all(len(p) <= 300 for p in cut) and " ".join(cut) == long and len(cut) == 8
