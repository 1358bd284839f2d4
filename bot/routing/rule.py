"""The rule router: keywords and patterns, scored and weighted by priority.

Raw score per agent = 10 per matched keyword + 20 per matched pattern; the design's score multiplies it by
priority / 100 (its confidence = min(100, score)), which the router uses only with a model (hybrid takes a
design score of ``rule.confidence_threshold`` × 100 without asking it); offline, the raw score and the meaning
decide (:mod:`bot.routing.judge`).  Latin keywords match whole words and their forms ("crashes" for crash,
:mod:`bot.routing.words`), case-insensitively; CJK keywords match as substrings.  The hot path is
built for thousands of triggers: text is tokenised once and single-word
keywords are looked up in a dict; all patterns run in one compiled regex.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections import defaultdict
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field

from agents.specs.patterns import pattern_window
from bot.routing.words import StemIndex
from bot.runs.catalog import RouteTarget as RouteTarget  # the agents as the catalog shows them to the routers

YIELD_ABOVE = 2048
"""Texts longer than this are scored in slices (one pattern each) by :meth:`RuleRouter.route_async`."""
KEYWORD_SCORE = 10
PATTERN_SCORE = 20
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_PLAIN = re.compile(r"^[\x20-\x7e]+$")


@dataclass
class RuleMatch:
    agent: str
    score: float
    confidence: float
    keywords: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    priority: int = 50
    """The winning agent's trigger priority."""
    raw: float = 0.0
    """The score before priority weighs it (10 a keyword, 20 a pattern): what ``rule.agent_min_score`` reads."""


@dataclass
class RuleResult:
    best: RuleMatch | None
    """The highest score above 0, or None."""
    latency_us: float
    runner_up: float = 0.0
    """The second-highest score (0 when one agent or none matched)."""
    hits: dict[str, RuleMatch] = field(default_factory=dict)
    """Every agent whose triggers matched, by name (the best one too)."""


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


_ESCAPED_LITERAL = re.compile(r"\\[^A-Za-z0-9]")
_CLASS_END = re.compile(r"\\.|\]", re.DOTALL)


def _literal_runs(pattern: str) -> list[str] | None:
    """Literal runs a match of ``pattern`` must contain (outside groups and classes), or None when the
    pattern has a top-level ``|`` (no literal is required then).

    Conservative: groups, classes and escapes like ``\\s`` end a run and are skipped; a character
    followed by ``?``, ``*`` or ``{`` is optional and left out; ``+`` keeps it and ends the run.
    """
    runs: list[str] = []
    current: list[str] = []
    i, n = 0, len(pattern)

    def cut() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    while i < n:
        c = pattern[i]
        if c in "?*{":
            if current:
                current.pop()
            cut()
            if c == "{":
                close = pattern.find("}", i)
                i = n if close < 0 else close
        elif c == "+":
            cut()
        elif c == "|":
            return None
        elif c == "\\":
            escaped = _ESCAPED_LITERAL.match(pattern, i)
            if escaped:
                current.append(pattern[i + 1])
            else:
                cut()
            i += 1
        elif c == "[":
            cut()
            j = i + 2 if pattern.startswith("[]", i) or pattern.startswith("[^]", i) else i + 1
            end = next((m for m in _CLASS_END.finditer(pattern, j) if m.group() == "]"), None)
            i = n if end is None else end.start()
        elif c == "(":
            cut()
            depth, i = 1, i + 1
            while i < n and depth:
                if pattern[i] == "\\":
                    i += 1
                elif pattern[i] == "[":
                    end = next((m for m in _CLASS_END.finditer(pattern, i + 1) if m.group() == "]"), None)
                    i = n if end is None else end.start()
                elif pattern[i] in "()":
                    depth += 1 if pattern[i] == "(" else -1
                i += 1
            continue
        elif c in ".^$)":
            cut()
        else:
            current.append(c)
        i += 1
    cut()
    return runs


def required_literal(pattern: str) -> str | None:
    """The longest literal a match must contain (lower-cased), to skip the regex when it is absent."""
    try:
        if re.compile(pattern).flags & re.VERBOSE:  # whitespace and comments are not literal there
            return None
    except re.error:
        return None
    runs = _literal_runs(pattern)
    if not runs:
        return None
    candidates = [r.lower() for r in runs if _PLAIN.match(r.lower()) or is_cjk(r)]
    candidates = [c for c in candidates if len(c.strip()) >= 2 or is_cjk(c)]
    return max(candidates, key=len) if candidates else None


class RuleRouter:
    """Scores every target's triggers against a message."""

    def __init__(self, targets: Iterable[RouteTarget]) -> None:
        self.targets = list(targets)
        # Agents are referred to by index on the hot path; weights fold in priority/100.
        self._weight = [t.priority / 100 for t in self.targets]
        self._words: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self._phrases: list[tuple[str, int, str]] = []
        self._substrings: list[tuple[str, int, str]] = []
        # Patterns grouped by a literal every match must contain: a group is skipped when its literal
        # is absent, so most of thousands of patterns cost one substring test per distinct literal.
        # A pattern whose time grows faster than the text reads only a bounded prefix (``pattern_window``).
        self._by_literal: dict[str, list[tuple[re.Pattern[str], int, str, int]]] = defaultdict(list)
        self._unfiltered: list[tuple[re.Pattern[str], int, str, int]] = []
        for i, t in enumerate(self.targets):
            for kw in t.keywords:
                folded = kw.casefold().strip()
                if not folded:
                    continue
                if is_cjk(folded):
                    self._substrings.append((folded, i, kw))
                elif _WORD.fullmatch(folded):
                    self._words[folded].append((i, kw))
                else:
                    self._phrases.append((folded, i, kw))
            for pat in t.patterns:
                compiled = re.compile(pat, re.IGNORECASE)
                literal = required_literal(pat)
                entry = (compiled, i, pat, pattern_window(pat) or sys.maxsize)
                (self._unfiltered if literal is None else self._by_literal[literal]).append(entry)
        self._stems = StemIndex((word, i, kw) for word, entries in self._words.items() for i, kw in entries)
        self._none = not (self._words or self._phrases or self._substrings or self._by_literal or self._unfiltered)
        """No keyword nor pattern: every text scores nothing, so none is read."""

    def route(self, text: str) -> RuleResult:
        """Score ``text`` in one go (for short texts, or where nothing else waits)."""
        if self._none:
            return RuleResult(None, 0.0)  # no trigger to look for (only built-ins, which the classifier tells apart)
        steps = self._route(text, pause=False)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def at_once(self, text: str) -> bool:
        """Whether :meth:`route_async` would score ``text`` in one go (then :meth:`route` may, without a coroutine)."""
        return len(text) <= YIELD_ABOVE or self._none

    async def route_async(self, text: str) -> RuleResult:
        """Score ``text``, letting the event loop run between patterns when it is long.

        Searching a 16 KB message with a few dozen patterns costs tens of milliseconds
        even when every pattern is linear; in slices of one pattern each, other chats'
        work goes on in between.
        """
        if self.at_once(text):
            return self.route(text)
        steps = self._route(text, pause=True)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value
            await asyncio.sleep(0)

    def _route(self, text: str, *, pause: bool) -> Generator[None, None, RuleResult]:
        started = time.perf_counter()
        folded = text.casefold()
        keyword_hits: list[tuple[int, str]] = []
        words = self._words
        tokens = set(_WORD.findall(folded))
        for token in tokens:
            entries = words.get(token)
            if entries:
                keyword_hits.extend(entries)
        if self._stems:  # "crashes", "errors" for the keywords crash, error
            keyword_hits.extend(self._stems.hits(tokens, words.keys()))
            keyword_hits = list(dict.fromkeys(keyword_hits))  # "bug" and "bugs" are one keyword
        if pause:
            yield
        for phrase, i, kw in self._phrases:
            if _has_phrase(folded, phrase):
                keyword_hits.append((i, kw))
        for sub, i, kw in self._substrings:
            if sub in folded:
                keyword_hits.append((i, kw))
        if pause:
            yield
        lowered = text.lower()
        pattern_hits: list[tuple[int, str]] = []
        for compiled, i, pat, end in self._unfiltered:
            if pause:
                yield
            if compiled.search(text, 0, end):
                pattern_hits.append((i, pat))
        for literal, group in self._by_literal.items():
            if literal in lowered:
                for compiled, i, pat, end in group:
                    if pause:
                        yield
                    if compiled.search(text, 0, end):
                        pattern_hits.append((i, pat))
        raw: dict[int, int] = defaultdict(int)
        for i, _ in keyword_hits:
            raw[i] += KEYWORD_SCORE
        for i, _ in pattern_hits:
            raw[i] += PATTERN_SCORE
        best: RuleMatch | None = None
        runner_up = 0.0
        hits: dict[str, RuleMatch] = {}
        if raw:
            weight = self._weight
            for i, points in raw.items():
                target = self.targets[i]
                hits[target.name] = RuleMatch(
                    agent=target.name,
                    score=points * weight[i],
                    confidence=min(100.0, points * weight[i]),
                    keywords=sorted({kw for j, kw in keyword_hits if j == i}),
                    patterns=[pat for j, pat in pattern_hits if j == i],
                    priority=target.priority,
                    raw=float(points),
                )
            # Ties: higher priority, then the order the agents were loaded in.
            top = min(raw, key=lambda i: (-raw[i] * weight[i], -weight[i], i))
            score = raw[top] * weight[top]
            runner_up = max((raw[i] * weight[i] for i in raw if i != top), default=0.0)
            if score > 0:
                best = hits[self.targets[top].name]
        return RuleResult(best, (time.perf_counter() - started) * 1e6, runner_up, hits)


def _has_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (a substring search, then the edges checked).

    A regex with a look-behind scans every position (16 KB: milliseconds); ``str.find`` jumps.
    """
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(phrase, start + 1)
    return False


def targets_from(specs: Sequence[object]) -> list[RouteTarget]:
    """Route targets from agent specs (anything with ``name``, ``title``, ``description``, ``triggers``)."""
    out = []
    for spec in specs:
        triggers = getattr(spec, "triggers", None)
        out.append(
            RouteTarget(
                name=spec.name,  # type: ignore[attr-defined]
                title=getattr(spec, "title", "") or "",
                description=getattr(spec, "description", "") or "",
                keywords=tuple(getattr(triggers, "keywords", ()) or ()),
                patterns=tuple(getattr(triggers, "patterns", ()) or ()),
                priority=int(getattr(triggers, "priority", 50)),
                examples=tuple(getattr(spec, "examples", ()) or ()),
            )
        )
    return out
