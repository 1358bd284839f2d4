"""Trigger patterns that stay cheap on long messages.

Every routed message is searched with every trigger pattern, on the gateway's
event loop, so one slow pattern stalls every chat.  Python's ``re`` backtracks,
and two shapes of pattern make a search on a long near-miss explode:

- **catastrophic** (exponential): a repeat whose body can itself match a
  variable amount, ``(a+)+``, ``(\\w+\\s?)*``, or a repeat over alternatives
  that can start the same way, ``(a|ab)*``.  A 30-character message can take
  minutes.  Found in the parsed pattern and rejected before anything runs it.
- **quadratic**: an unbounded repeat that can run over most of the text before
  the rest of the pattern fails (``[^,]+,`` on text without commas, ``fix.*test``
  on many "fix" and no "test"), tried again from every position (or every "fix"):
  a long message costs a noticeable part of a second (figures: bench/README.md,
  "Slow trigger patterns").  Measured: the pattern is searched in
  near-miss texts made of its own literals and common characters; one whose time
  grows faster than the text is **searched only in the first** :data:`BOUNDED_CHARS`
  **characters** of a message (a trigger names what a request is about, and a request
  says that early, and that prefix of the worst near-miss costs ``fix.*test`` little), and it
  is refused only when even that prefix costs more than :data:`_WINDOW_BUDGET_S`
  (``fix.*test.*done``: cubic), with the repeat that is slow and a bounded rewrite.

Both checks run once per pattern (cached): when an agent file is validated, and when the router is built.
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

BOUNDED_CHARS = 1024
"""A pattern whose search time grows faster than the text is searched in this many first characters of a message."""
_SMALL = 512
_CHEAP_S = 0.00005
"""A search of 512 characters faster than this is taken as linear (quadratic: 64 × it at 4 K)."""
_SLOW_S = 0.0005
"""Below this a search of 2 K characters costs nothing worth bounding, whatever its growth."""
_GROWTH = 3.0
"""Time ratio for twice the text above which a search is taken as worse than linear (quadratic: 4)."""
_WINDOW_BUDGET_S = 0.010
"""The most one search of :data:`BOUNDED_CHARS` characters may cost (CPU time); slower patterns are refused."""
_BASE_PROBES = ("a", "1", " ", "中", "a ", "a-", "a.", "a:", "ab1_", "\n")


@lru_cache(maxsize=1024)
def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a trigger pattern (it does not compile, or is slow even on a bounded prefix of a
    message), or None."""
    try:
        re.compile(pattern, re.IGNORECASE)
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
    growth = _growth(pattern)
    return None if growth in (None, "bounded") else growth


@lru_cache(maxsize=1024)
def pattern_window(pattern: str) -> int | None:
    """How much of a message ``pattern`` is searched in: None (all the routed text: its time grows with the text)
    or :data:`BOUNDED_CHARS` (its time grows faster, as ``fix.*test`` does on a long run of "fix" without "test")."""
    try:
        return BOUNDED_CHARS if _growth(pattern) == "bounded" else None
    except re.error:
        return None


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


@lru_cache(maxsize=1024)
def _growth(pattern: str) -> str | None:
    """``"bounded"`` when a search's time grows faster than the text (the pattern then reads only the first
    :data:`BOUNDED_CHARS` characters), a reason to refuse it when even that prefix is too slow, else None."""
    compiled = re.compile(pattern, re.IGNORECASE)
    bounded = False
    for unit in _probes(pattern):
        if _cpu(compiled, _text(unit, _SMALL)) < _CHEAP_S:
            continue
        # Longer and longer up to the window, so a pattern worse than quadratic is refused after one slow search,
        # not after minutes of them; the fastest of three at the window (a busy machine only adds time).
        window = 0.0
        for length in (_SMALL // 4, _SMALL // 2, _SMALL, BOUNDED_CHARS):
            window = _cpu(compiled, _text(unit, length))
            if window > _WINDOW_BUDGET_S:
                window = min([window, *(_cpu(compiled, _text(unit, length)) for _ in range(2))])
                if window > _WINDOW_BUDGET_S:
                    near_miss = _text(unit, 24).strip()
                    return (
                        f"regex {pattern!r} is too slow even on the first {BOUNDED_CHARS:,} characters of a message "
                        f"({window * 1000:.0f} ms for {length:,} characters of {near_miss!r}…): {slow_part(pattern)}"
                    )
        if bounded:
            continue
        # Does the time grow faster than the text? Twice and four times the window, the fastest of a few runs
        # each (a preempted search looks slow once; it does not keep growing).
        window = min(window, *(_cpu(compiled, _text(unit, BOUNDED_CHARS)) for _ in range(2)))
        double = min(_cpu(compiled, _text(unit, 2 * BOUNDED_CHARS)) for _ in range(3))
        if double <= _SLOW_S or double <= _GROWTH * window:
            continue
        quadruple = min(_cpu(compiled, _text(unit, 4 * BOUNDED_CHARS)) for _ in range(2))
        bounded = quadruple > _GROWTH * double
    return "bounded" if bounded else None


def slow_part(pattern: str) -> str:
    """What makes ``pattern`` slow on a long near-miss, in words, with a bounded rewrite to try."""
    found = _unbounded_repeat(pattern)
    if found is None:
        return "bound its repeats (e.g. [^,]{1,80} instead of [^,]+, .{0,200} instead of .*)"
    start, end, atom, quantifier = found
    lead_match = _LITERAL_END.search(_ANCHORS.sub("", pattern[:start]))
    follow_match = _LITERAL_START.match(_ANCHORS.sub("", pattern[end:]))
    lead = lead_match.group().strip() if lead_match else ""
    follow = follow_match.group().strip() if follow_match else ""
    repeat = f"`{atom}{quantifier}`" + (f" after {lead!r}" if lead else "")
    reach = "to the end of the line" if atom == "." else "as far as it matches"
    look = f"looking for {follow!r}" if follow else "looking for the rest of the pattern"
    missing = f"no {follow!r}" if follow else "no match"
    if lead:
        where = f"from every {lead!r} in the message"
        cost = f"a long message with many {lead!r} and {missing} after them costs its length times their number"
    else:
        where, cost = "from every position", f"a long message with {missing} costs its length squared"
    low = {"*": "0", "+": "1"}.get(quantifier[0], quantifier[1:].split(",")[0])
    lazy = "?" if quantifier.endswith("?") else ""
    rewrite = f"{pattern[:start]}{atom}{{{low},200}}{lazy}{pattern[end:]}"
    return f"{repeat} runs {reach} and back, {look}, {where}: {cost}; bound the repeat, e.g. {rewrite!r}"


_ANCHORS = re.compile(r"\\[bBAZ]|[\^$]")
_LITERAL_END = re.compile(r"[^.^$*+?{}\[\]\\|()]+$")
_LITERAL_START = re.compile(r"[^.^$*+?{}\[\]\\|()]+")
_ATOM = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]])*\]|\((?:\?[:=!]|\?P<\w+>|\?<[=!]|\?<\w+>)?|\)|.", re.DOTALL)
_UNBOUNDED = re.compile(r"(?:\*|\+|\{\d+,\})\??")


def _unbounded_repeat(pattern: str) -> tuple[int, int, str, str] | None:
    """The first repeat without an upper bound that something follows: (start, end, atom, quantifier)."""
    i, depth, opened = 0, 0, []
    last: tuple[int, int] | None = None
    while i < len(pattern):
        atom = _ATOM.match(pattern, i)
        assert atom is not None  # ``.`` with DOTALL matches any character
        token, i = atom.group(), atom.end()
        if token.startswith("("):
            opened.append(atom.start())
            depth += 1
            last = None
            continue
        if token == ")" and opened:
            last, depth = (opened.pop(), i), depth - 1
        elif token in "*+?{}|" and len(token) == 1:
            last = None
        else:
            last = (atom.start(), i)
        repeat = _UNBOUNDED.match(pattern, i)
        possessive = repeat is not None and pattern.startswith("+", repeat.end())
        if repeat is not None and last is not None and not possessive and pattern[repeat.end() :][:1] not in "|)$":
            return last[0], repeat.end(), pattern[last[0] : last[1]], repeat.group()
    return None


def _probes(pattern: str) -> list[str]:
    """Near-miss texts: the pattern's own literal words (so its repeats get going), all of them but the last in
    order (``fix test `` for ``fix.*test.*done``), and common characters."""
    found = [w.lower() for w in re.findall(r"[^\W\d_]+|[\u3400-\u9fff]+", re.sub(r"\\.", " ", pattern))]
    words = sorted(set(found))
    chained = [" ".join(found[:-1]) + " "] if len(found) > 2 else []
    return [*(f"{w} " for w in words), *words, *chained, *_BASE_PROBES]


def _text(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def _cpu(compiled: re.Pattern[str], text: str) -> float:
    """The search's CPU time on this thread (what other processes do does not count)."""
    started = time.thread_time()
    compiled.search(text)
    return time.thread_time() - started
