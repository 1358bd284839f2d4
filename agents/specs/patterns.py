"""Trigger patterns that stay cheap on long messages.

Every routed message is searched with every trigger pattern, on the gateway's
event loop, so one slow pattern stalls every chat.  Python's ``re`` backtracks,
and two shapes of pattern make a search on a long near-miss explode:

- **catastrophic** (exponential): a repeat whose body can itself match a
  variable amount, ``(a+)+``, ``(\\w+\\s?)*``, or a repeat over alternatives
  that can start the same way, ``(a|ab)*``.  A 30-character message can take
  minutes.  Found in the parsed pattern and rejected before anything runs it.
- **quadratic**: an unbounded repeat that can run over most of the text before
  the rest of the pattern fails (``[^,]+,`` on text without commas, ``x.*y``
  when there are many ``x`` and no ``y``), tried again from every position: a
  16 KB message costs seconds.  Measured: the pattern is searched in near-miss
  texts made of its own literals and common characters, at 512 and 2,048
  characters; one that is slow at 2 K and grows much faster than the text is
  rejected, with a hint to bound its repeats (``[^,]{1,80}``, ``.{0,200}``) or
  start it with a literal.

Both checks run once per pattern when an agent file is validated (cached).
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from typing import Any

try:  # CPython's own parser for ``re``; without it only the measurement below runs
    import re._constants as _sre
    import re._parser as _parser
except ImportError:  # pragma: no cover - other interpreters
    _parser = None
    _sre = None

_SMALL, _LARGE = 512, 2048
_CHEAP_S = 0.00005
"""A search of 512 characters faster than this cannot grow into a slow one at 2 K (quadratic: 16 × it)."""
_SLOW_S = 0.0005
"""Below this a search of 2 K characters costs nothing worth refusing, whatever its growth."""
_GROWTH = 8.0
"""Time ratio for 4× the text above which a search is taken as worse than linear (quadratic: 16)."""
_BASE_PROBES = ("a", "1", " ", "中", "a ", "a-", "a.", "a:", "ab1_", "\n")


@lru_cache(maxsize=1024)
def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a trigger pattern (it does not compile, or is slow on long messages), or None."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        return f"invalid regex {pattern!r}: {exc}"
    if _parser is not None:
        try:
            parsed = _parser.parse(pattern, re.IGNORECASE)
        except re.error:  # pragma: no cover - compiled above
            parsed = None
        if parsed is not None:
            problem = _catastrophic(parsed)
            if problem is not None:
                return f"regex {pattern!r} can take exponential time on a near-miss ({problem}); rewrite it without it"
    return _quadratic(pattern, compiled)


def _catastrophic(parsed: Any) -> str | None:
    for op, arg in parsed:
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            low, high, body = arg
            if high > 1:
                if _varies(body):
                    return "a repeat of something that itself repeats"
                if _overlapping_branch(body):
                    return "a repeat of alternatives that can start alike"
            problem = _catastrophic(body)
        elif op is _sre.SUBPATTERN:
            problem = _catastrophic(arg[-1])
        elif op is _sre.BRANCH:
            problem = next((p for p in map(_catastrophic, arg[1]) if p is not None), None)
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            problem = _catastrophic(arg[1])
        else:  # literals, classes, anchors; atomic groups and possessive repeats never backtrack
            problem = None
        if problem is not None:
            return problem
    return None


def _varies(parsed: Any) -> bool:
    """Whether ``parsed`` contains a repeat of variable count (it can match more or less text)."""
    for op, arg in parsed:
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            varies = arg[0] != arg[1] or _varies(arg[2])
        elif op is _sre.SUBPATTERN:
            varies = _varies(arg[-1])
        elif op is _sre.BRANCH:
            varies = any(_varies(alt) for alt in arg[1]) or _widths_differ(arg[1])
        else:
            varies = False
        if varies:
            return True
    return False


def _widths_differ(alternatives: Any) -> bool:
    widths = {_width(alt) for alt in alternatives}
    return len(widths) > 1 or None in widths


def _width(parsed: Any) -> int | None:
    total = 0
    for op, arg in parsed:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN, _sre.CATEGORY):
            total += 1
        elif op is _sre.AT:
            continue
        elif op is _sre.SUBPATTERN:
            inner = _width(arg[-1])
            if inner is None:
                return None
            total += inner
        else:
            return None
    return total


def _overlapping_branch(parsed: Any) -> bool:
    """Whether ``parsed`` holds, anywhere, alternatives that may match the same text (so a repeat is ambiguous)."""
    for op, arg in parsed:
        if op is _sre.BRANCH:
            firsts = [_first(alt) for alt in arg[1]]
            for i, a in enumerate(firsts):
                for b in firsts[i + 1 :]:
                    if a is None or b is None or a & b:
                        return True
            if any(_overlapping_branch(alt) for alt in arg[1]):
                return True
        elif (op is _sre.SUBPATTERN and _overlapping_branch(arg[-1])) or (
            op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and _overlapping_branch(arg[2])
        ):
            return True
    return False


_EMPTY = frozenset({-1})
"""The first-character set of an alternative that can match nothing: two of them overlap."""


def _first(parsed: Any) -> frozenset[int] | None:
    """The code points a match of ``parsed`` can start with (lower-cased), None when it may be anything."""
    for op, arg in parsed:
        if op is _sre.AT:
            continue
        if op is _sre.LITERAL:
            return frozenset({ord(chr(arg).lower())})
        if op is _sre.SUBPATTERN:
            return _first(arg[-1])
        return None
    return _EMPTY


def _quadratic(pattern: str, compiled: re.Pattern[str]) -> str | None:
    for unit in _probes(pattern):
        small_text = (unit * (_SMALL // len(unit) + 1))[:_SMALL]
        small = _time(compiled, small_text)
        if small < _CHEAP_S:
            continue
        large_text = (unit * (_LARGE // len(unit) + 1))[:_LARGE]
        large = _time(compiled, large_text)
        if large <= _SLOW_S or large <= _GROWTH * small:
            continue
        # Suspicious: measure again, the fastest of a few runs (a busy machine only ever adds time), and
        # judge by how the time grows with the text, which load changes far less than the time itself; it
        # must grow again at four times the length (a loaded machine once failed a built-in agent's pattern
        # on the first step alone: a preempted search looks slow, it does not keep growing).
        small = min(_time(compiled, small_text) for _ in range(5))
        large = min(_time(compiled, large_text) for _ in range(5))
        if large <= _SLOW_S or large <= _GROWTH * max(small, 1e-6):
            continue
        huge_text = (unit * (4 * _LARGE // len(unit) + 1))[: 4 * _LARGE]
        huge = min(_time(compiled, huge_text) for _ in range(3))
        if huge > _GROWTH * large:
            return (
                f"regex {pattern!r} is slow on long messages ({large * 1000:.0f} ms for {_LARGE:,} characters, "
                f"growing faster than the text): bound its repeats (e.g. [^,]{{1,80}} instead of [^,]+, "
                ".{0,200} instead of .*) or start it with a literal"
            )
    return None


def _probes(pattern: str) -> list[str]:
    """Near-miss texts: the pattern's own literal words (so its repeats get going) and common characters."""
    words = {w.lower() for w in re.findall(r"[^\W\d_]{2,}|[\u3400-\u9fff]+", pattern)}
    return [*(f"{w} " for w in sorted(words)), *sorted(words), *_BASE_PROBES]


def _time(compiled: re.Pattern[str], text: str) -> float:
    started = time.perf_counter()
    compiled.search(text)
    return time.perf_counter() - started
