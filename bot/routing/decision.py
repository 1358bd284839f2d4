"""What a routing decision is, how it is announced, and how ``@name`` / ``@auto --strategy=`` target a message."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

STRATEGY_NAMES = ("rule", "llm", "hybrid")

_TARGET = re.compile(r"^@([A-Za-z][A-Za-z0-9_-]*)(?:\s+|$)(.*)$", re.DOTALL)
_STRATEGY_FLAG = re.compile(r"^--strategy=(\S+)\s*(.*)$", re.DOTALL)


@dataclass
class RouteDecision:
    """Who answers, and why (shown by ``/route`` and recorded in traces)."""

    agent: str | None
    method: Literal["explicit", "rule", "llm", "fallback", "disabled"]
    strategy: str
    confidence: float = 0.0
    """How sure, 0-1: the offline judge's probability (a file agent), the built-in's share, 1 for ``@name``
    and for the model's choice (it gives no number)."""
    matched_keywords: list[str] = field(default_factory=list)
    matched_patterns: list[str] = field(default_factory=list)
    latency_us: float = 0.0
    text: str = ""
    """The message without the ``@name`` / ``@auto`` prefix."""
    note: str = ""
    """Why a fallback happened, or an LLM error."""
    fallback: str | None = None
    strong: bool = False
    """Without the encoder: a file agent's trigger at ``rule.strong_priority`` decided (hybrid does not ask the
    model then)."""
    model_call: dict[str, Any] | None = None
    """The routing model's call (``model`` and tokens), when the model was asked and answered: counted where
    model calls are (an evaluation's calls, tokens and cost)."""
    factors: dict[str, Any] = field(default_factory=dict)
    """Each factor of the decision (``bot route --json``, traces): the classifiers' shares, the agent nearest in
    meaning with its closeness and probability, the triggers' scores, the runner-up, the encoder's state."""

    @property
    def matched(self) -> list[str]:
        """The triggers (keywords, then patterns) that chose the agent."""
        return [*self.matched_keywords, *self.matched_patterns]

    def summary(self) -> str:
        where = self.agent or "nobody"
        return f"{where} ({self.method}, {self.confidence:.2f})"


def routing_notice(decision: RouteDecision, notify: bool | str, *, agent: str, file_agent: bool) -> str | None:
    """The line that says where a message went (``routing.notify``), or None: ``agents`` announces a file agent
    the rules or the model chose (the design's "🤖 Auto-routing to: debug-analyzer (matched: bug)"), ``true``
    every routed message."""
    if notify is False or (notify == "agents" and not (file_agent and decision.method in ("rule", "llm"))):
        return None
    if decision.method == "rule" and decision.matched:
        return f"🤖 Auto-routing to: {agent} (matched: {', '.join(decision.matched)})"
    why = decision.factors.get("why")
    if why:
        return f"🤖 Auto-routing to: {agent} ({why})"
    return f"🤖 Auto-routing to: {agent} ({decision.method}, {decision.confidence:.0%})"


@dataclass
class Targeting:
    agent: str | None
    strategy: str | None
    text: str
    error: str | None = None


def parse_target(text: str, known: Collection[str], strategies: Collection[str] = STRATEGY_NAMES) -> Targeting:
    """Split ``@name``/``@auto --strategy=…`` off the start of ``text``.

    An ``@word`` that is no agent is plain text (``@john, can you…``), unless it is so close
    to an agent's name that it is surely a typo: then ``error`` says so with a did-you-mean,
    as it does for an unknown strategy.
    """
    if not text.lstrip().startswith("@"):  # most messages: no regex to run
        return Targeting(None, None, text)
    match = _TARGET.match(text.strip())
    if not match:
        return Targeting(None, None, text)
    name, rest = match.group(1).lower(), match.group(2).strip()
    if name == "auto":
        flag = _STRATEGY_FLAG.match(rest)
        if flag is None:
            return Targeting(None, None, rest)
        strategy, rest = flag.group(1).lower(), flag.group(2).strip()
        if strategy not in strategies:
            close = difflib.get_close_matches(strategy, list(strategies), n=1, cutoff=0.5)
            hint = f" Did you mean --strategy={close[0]}?" if close else ""
            return Targeting(None, None, rest, error=f"Unknown strategy {strategy!r}: use rule, llm or hybrid.{hint}")
        return Targeting(None, strategy, rest)
    if name in known:
        return Targeting(name, None, rest)
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    if close:
        error = f"There is no agent @{name}. Did you mean @{close[0]}? (/agents lists them)"
        return Targeting(None, None, text, error=error)
    return Targeting(None, None, text)
