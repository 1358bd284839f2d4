"""The offline decision as a :class:`RouteDecision`: by meaning (the encoder ready), by triggers and the
classifier (without it), or by an admin's correction. Every factor goes into ``decision.factors``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.config.settings import RoutingSection
from bot.routing.decision import RouteDecision
from bot.routing.judge import BUILTINS, Verdict
from bot.routing.meaning import Evidence
from bot.routing.offline import Correction, MeaningView
from bot.routing.rule import RuleResult


class Router(Protocol):
    """What a verdict needs of :class:`bot.routing.Router` (no import: the router imports this module)."""

    @property
    def classifier(self) -> Any: ...

    def _fallback(
        self,
        text: str,
        strategy: str,
        note: str,
        started: float,
        *,
        rule: RuleResult | None = ...,
        method: Any = ...,
        factors: dict[str, object] | None = ...,
    ) -> RouteDecision: ...


@dataclass(frozen=True)
class Asked:
    """One message as the offline decision sees it."""

    text: str
    request: str
    """What the encoder reads (:func:`bot.routing.request.request_of`)."""
    config: RoutingSection
    strategy: str
    started: float
    rule: RuleResult
    """The file agents' trigger scores."""
    shares: Sequence[float]
    """The character n-gram classifier's chat, react and plan shares."""


def _elapsed(started: float) -> float:
    return (time.perf_counter() - started) * 1e6


def _rounded(values: dict[str, float], digits: int = 3) -> dict[str, float]:
    return {k: round(float(v), digits) for k, v in values.items()}


def _triggers(rule: RuleResult) -> dict[str, Any]:
    """Each file agent whose triggers matched: its keywords, patterns, raw score and the design's score."""
    return {
        name: {"keywords": m.keywords, "patterns": m.patterns, "raw": m.raw, "design_score": round(m.score, 1)}
        for name, m in rule.hits.items()
    }


def corrected(
    text: str, strategy: str, started: float, correction: Correction, closeness: float, state: str
) -> RouteDecision:
    how = "this message" if closeness >= 1.0 else f"a message {closeness:.2f} close to it"
    return RouteDecision(
        agent=correction.agent,
        method="rule",
        strategy=strategy,
        confidence=round(min(1.0, closeness), 3),
        latency_us=_elapsed(started),
        text=text,
        note=f"an admin routed {how} to {correction.agent} (correction {correction.id})",
        factors={
            "correction": {"id": correction.id, "text": correction.text, "closeness": round(closeness, 3)},
            "encoder": state,
            "why": f"corrected by an admin: {correction.text[:40]!r}",
        },
    )


def by_meaning(
    router: Router, view: MeaningView, asked: Asked, vector: Any, evidence: Evidence
) -> RouteDecision | None:
    """The decision by ``vector``, the request's place in the encoder's space, and ``evidence``, where it stands
    there (:meth:`bot.routing.meaning.Space.evidence`)."""
    text, request, config, strategy, started = asked.text, asked.request, asked.config, asked.strategy, asked.started
    rule, shares = asked.rule, asked.shares
    near = view.correction_near(vector)
    if near is not None:
        return corrected(text, strategy, started, near[0], near[1], view.meaning.state)
    verdict: Verdict = view.meaning.judge.decide(evidence, rule, shares, len(text))
    factors: dict[str, Any] = {
        "encoder": view.meaning.state,
        "classifier": _rounded(dict(zip(BUILTINS, shares, strict=True))),
        "meaning": _rounded(dict(zip(BUILTINS, evidence.head, strict=True))),
        "builtins": _rounded(verdict.builtin),
    }
    if request != text:
        factors["request"] = request
    if verdict.candidate is not None:
        agents = sorted(evidence.agents, key=lambda a: a.z, reverse=True)
        factors["candidate"] = {
            "agent": verdict.candidate,
            "probability": round(verdict.candidate_probability, 3),
            "closeness": round(agents[0].closeness, 3),
            "z": round(agents[0].z, 2),
            "closest": {"kind": agents[0].utterance.kind, "text": agents[0].utterance.text}
            if agents[0].utterance
            else None,
        }
        if len(agents) > 1:
            factors["runner_up"] = {
                "agent": agents[1].name,
                "closeness": round(agents[1].closeness, 3),
                "z": round(agents[1].z, 2),
            }
        factors["judge"] = _rounded(verdict.factors)
    if rule.hits:
        factors["triggers"] = _triggers(rule)
    hit = rule.hits.get(verdict.agent)
    file_agent = verdict.agent not in BUILTINS
    if file_agent:
        why = [f"meaning {verdict.probability:.0%}"]
        if hit is not None:
            why.append(f"matched: {', '.join([*hit.keywords, *hit.patterns])}")
        factors["why"] = "; ".join(why)
    else:
        share = verdict.builtin[verdict.agent]
        if share < config.rule.min_confidence:
            note = f"not recognised: {verdict.agent} at {share:.0%} is below {config.rule.min_confidence:.0%}"
            return router._fallback(text, strategy, note, started, rule=rule, factors=factors)
    note = _note(verdict, factors)
    return RouteDecision(
        agent=verdict.agent,
        method="rule",
        strategy=strategy,
        confidence=round(verdict.probability, 3),
        matched_keywords=list(hit.keywords) if hit is not None and file_agent else [],
        matched_patterns=list(hit.patterns) if hit is not None and file_agent else [],
        latency_us=_elapsed(started),
        text=text,
        note=note,
        factors=factors,
    )


def _note(verdict: Verdict, factors: dict[str, Any]) -> str:
    shares = " · ".join(f"{k} {v:.0%}" for k, v in verdict.builtin.items())
    note = f"built-ins: {shares}"
    candidate = factors.get("candidate")
    if candidate:
        note += f"; nearest agent {candidate['agent']} (closeness {candidate['closeness']:.2f}, z {candidate['z']:.1f})"
        note += f" at {candidate['probability']:.0%}"
        note += " wins" if verdict.agent == candidate["agent"] else " loses"
    return note


def by_triggers(router: Router, asked: Asked, index: int, state: str) -> RouteDecision | None:
    """Without the encoder: a file agent's triggers (whatever its priority) when they score enough, else the
    classifier (the wave 3 rule, without priority weighting the threshold)."""
    text, request, config, strategy, started = asked.text, asked.request, asked.config, asked.strategy, asked.started
    rule, shares = asked.rule, asked.shares
    rules = config.rule
    best = rule.best
    factors: dict[str, Any] = {"encoder": state, "classifier": _rounded(dict(zip(BUILTINS, shares, strict=True)))}
    if request != text:
        factors["request"] = request
    if rule.hits:
        factors["triggers"] = _triggers(rule)
    top = max((m for m in rule.hits.values()), key=lambda m: (m.raw, m.priority), default=None)
    runner_up = max((m.raw for m in rule.hits.values() if m is not top), default=0.0)
    passes = top is not None and top.raw >= rules.agent_min_score and top.raw - runner_up >= rules.agent_margin
    if top is not None and passes and (max(shares) < rules.classifier_sure or rules.classifier_sure == 0):
        why = f"{top.agent}'s triggers scored {top.raw:g}"
        return _trigger_decision(text, strategy, started, top, why, factors)
    labels = router.classifier.labels
    confidence = shares[index]
    note = "classifier: " + " · ".join(f"{label} {p:.0%}" for label, p in zip(labels, shares, strict=True))
    sure = rules.classifier_sure
    strong = best is not None and best.priority >= rules.strong_priority and sure > 0
    if best is not None and strong:
        # The operator's priority says "mine when my trigger matches"; the classifier, which only knows
        # the built-ins, overrules that only when it is very sure (a prototypical chat / react / plan).
        if confidence < sure:
            why = f"{note}; {best.agent}'s trigger at priority {best.priority} wins below {sure:.0%}"
            decision = _trigger_decision(text, strategy, started, best, why, factors)
            decision.strong = True
            return decision
        note += f"; {best.agent}'s trigger at priority {best.priority} loses to the classifier's {sure:.0%}"
    elif top is not None:
        note += f"; {top.agent}'s triggers scored {top.raw:g} (needs {rules.agent_min_score:g}"
        note += f", {rules.agent_margin:g} ahead of the next)"
    if confidence < rules.min_confidence:
        unsure = f"{note} (below {rules.min_confidence:.0%}: not recognised)"
        return router._fallback(text, strategy, unsure, started, rule=rule, factors=factors)
    return RouteDecision(
        labels[index], "rule", strategy, round(confidence, 3), [], [], _elapsed(started), text, note, factors=factors
    )


def _trigger_decision(
    text: str, strategy: str, started: float, match: Any, note: str, factors: dict[str, Any]
) -> RouteDecision:
    factors = {**factors, "why": f"matched: {', '.join([*match.keywords, *match.patterns])}"}
    return RouteDecision(
        agent=match.agent,
        method="rule",
        strategy=strategy,
        confidence=round(min(1.0, match.score / 100), 3),  # the design's score: without the encoder, that is all
        matched_keywords=list(match.keywords),
        matched_patterns=list(match.patterns),
        latency_us=_elapsed(started),
        text=text,
        note=note,
        factors=factors,
    )
