"""Trigger patterns whose time grows faster than the text: the design's ``fix.*test`` is accepted and searched only
in the first ``BOUNDED_CHARS`` characters of a message; one too slow even there is refused, and the reason names
the repeat that is slow and a bounded rewrite (not "start it with a literal", which ``fix.*test`` already does)."""

from __future__ import annotations

import time

import pytest

from agents.spec import SpecFileError, parse_agent_text
from agents.specs.patterns import BOUNDED_CHARS, pattern_problem, pattern_window
from bot.routing.rule import RouteTarget, RuleRouter


def test_the_design_pattern_loads_and_reads_a_bounded_prefix() -> None:
    spec = parse_agent_text("---\nname: test-fixer\ntriggers: {patterns: ['fix.*test'], priority: 80}\n---\nx\n")
    assert spec.triggers.patterns == ("fix.*test",)
    assert pattern_window("fix.*test") == BOUNDED_CHARS == 1024
    assert pattern_window(r"\bfix (this|the) bug\b") is None, "a linear pattern reads the whole routed text"


def test_the_router_searches_a_slow_pattern_in_the_prefix_only_and_stays_fast() -> None:
    router = RuleRouter([RouteTarget("test-fixer", patterns=("fix.*test",), priority=100)])
    assert router.route("please fix the failing test in parser.py").best is not None
    late = "x" * BOUNDED_CHARS + " fix the test"
    assert router.route(late).best is None, "past the first 1,024 characters a bounded pattern does not look"
    linear = RuleRouter([RouteTarget("fixer", patterns=(r"\bfix the test\b",), priority=100)])
    assert linear.route(late).best is not None, "a linear pattern still reads all of it"
    worst = "fix " * 4096  # 16 KB of "fix" and no "test": 330 ms for the whole text, the prefix only is searched
    started = time.thread_time()
    router.route(worst)
    assert time.thread_time() - started < 0.05


def test_a_pattern_too_slow_even_on_the_prefix_is_refused_saying_what_is_slow() -> None:
    problem = pattern_problem("fix.*test.*done.*now")
    assert problem is not None and "too slow even on the first 1,024 characters" in problem
    assert "`.*` after 'fix' runs to the end of the line and back, looking for 'test'" in problem
    assert "from every 'fix' in the message" in problem and "'fix.{0,200}test.*done.*now'" in problem
    assert "start it with a literal" not in problem
    with pytest.raises(SpecFileError) as refused:
        parse_agent_text("---\nname: slow\ntriggers: {patterns: ['.*x.*y.*z']}\n---\nx\n", source="slow.md")
    assert "slow.md: triggers.patterns[0]:" in str(refused.value) and "from every position" in str(refused.value)
