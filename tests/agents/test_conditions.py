"""The condition language of graph edges and handoffs: parsed once, evaluated against a state, never eval."""

from __future__ import annotations

from typing import Any

import pytest

from agents.conditions import ConditionError, parse_condition

STATE: dict[str, Any] = {
    "analysis": {"can_auto_fix": True, "needs_human": False, "severity": 3, "files": ["app.py", "db.py"]},
    "fix": {"applied": True, "attempts": 2},
    "task": {"status": "need-review", "owner": None},
    "review": {"verdict": "nit"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("analysis.can_auto_fix", True),
        ("analysis.needs_human", False),
        ("not analysis.needs_human", True),
        ("analysis.can_auto_fix and not analysis.needs_human", True),
        ("analysis.needs_human or fix.applied", True),
        ("task.status == 'need-review'", True),
        ('task.status != "need-review"', False),
        ("fix.attempts < 3", True),
        ("fix.attempts >= 3", False),
        ("analysis.severity <= 3 and analysis.severity > 2.5", True),
        ("review.verdict in ['approve', 'nit']", True),
        ("review.verdict not in ['approve', 'nit']", False),
        ("'db.py' in analysis.files", True),
        ("task.owner == null", True),
        ("task.owner", False),
        ("missing.path.deep", False),
        ("missing.path == null", True),
        ("task.owner < 3", False),  # cannot compare: false, not an error
        ("task.status > 1", False),
        ("(analysis.needs_human or fix.applied) and review.verdict == 'nit'", True),
        ("not (fix.applied and true)", False),
        ("fix.attempts == 2", True),
        ("fix.attempts == -2", False),
        ("TRUE and not FALSE", True),
    ],
)
def test_conditions_hold_or_not(text: str, expected: bool) -> None:
    assert parse_condition(text).holds(STATE) is expected


@pytest.mark.parametrize(
    ("text", "problem", "position"),
    [
        ("", "the condition is empty", 0),
        ("task.status ==", "the condition ends too early", 14),
        ("task.status = 'x'", "unexpected '='", 12),
        ("__import__('os').system('x')", "unexpected '.'", 16),
        ("__import__('os')", "unexpected '('", 10),
        ("a and (b or c", "expected ')'", 13),
        ("a b", "unexpected 'b'", 2),
        ("x in [1, 2", "expected ',' or ']'", 10),
        ("a; b", "unexpected ';'", 1),
        ("'open", 'unexpected "\'"', 0),
    ],
)
def test_what_does_not_parse_says_what_and_where(text: str, problem: str, position: int) -> None:
    with pytest.raises(ConditionError) as caught:
        parse_condition(text)
    assert caught.value.problem == problem and caught.value.position == position
    assert "^" in str(caught.value)


def test_limits_and_names() -> None:
    with pytest.raises(ConditionError, match="longer than 500"):
        parse_condition("a or " * 200 + "b")
    with pytest.raises(ConditionError, match="nested more than 32 deep"):
        parse_condition("not " * 40 + "a")
    condition = parse_condition("analysis.can_auto_fix and fix.applied in [true] or not review.verdict == x.y")
    assert condition.names() == {"analysis", "fix", "review", "x"}
    assert str(condition) == "analysis.can_auto_fix and fix.applied in [true] or not review.verdict == x.y"
