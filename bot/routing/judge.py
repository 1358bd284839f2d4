"""The offline decision: a file agent, or the built-in the classifiers name, with one probability.

Every piece of evidence about a message is a number (a *factor*): for the agent it stands closest to by meaning
(highest z-score, :mod:`bot.routing.meaning`) its closeness, z-score and lead over the next agent, whether an
example or a correction was the closest utterance, how many of its keywords and patterns matched (word forms
included), how close the message's nearest corpus neighbours stand to it; and for the built-ins the character
n-gram classifier's and the meaning head's shares and how close the message comes to known chat, tool and plan
requests. A small gradient-boosted model (100 trees of depth 2, ``bot/routing/model/judge-v1.json``, trained
by ``scripts/train_judge.py`` on the dev sets in ``tests/data/routing/dev*``, never on the held-out one) turns
the factors into the probability that the message is for that agent. At 0.5 or more it is; otherwise the
built-in with the highest blended share answers (the classifier's share times the head's squared, normalised:
the classifier knows English and Chinese by their letters, the head every language of the encoder).

So a trigger word alone decides nothing: "I caught a stomach bug" matches the debugger's ``bug`` but stands far
from it in meaning and next to health questions, so chat keeps it; "my app dies when I click save" has no
trigger word and stands next to the debugger's examples, so the debugger takes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.routing.meaning import AgentEvidence, Evidence
from bot.routing.rule import RuleResult

JUDGE_FORMAT = "route-judge/1"
JUDGE_PATH = Path(__file__).with_name("model") / "judge-v1.json"
FACTORS = (
    "z",
    "z_lead",
    "closeness",
    "closeness_lead",
    "by_example",
    "keywords",
    "patterns",
    "classifier_chat",
    "classifier_react",
    "classifier_plan",
    "meaning_chat",
    "meaning_react",
    "meaning_plan",
    "near_chat",
    "near_react",
    "near_plan",
    "length",
    "over_p99",
    "neighbours",
    "neighbours_lead",
    "nearest",
)
"""The factors, in the order the model reads them."""
BUILTINS = ("chat", "react", "plan")
HEAD_WEIGHT = 2.0
"""The meaning head's weight in the built-ins' blend (log shares: classifier + 2 × head); dev set: 87.4 % of the
built-in messages by the classifier alone, 96.0 % blended."""


@dataclass(frozen=True)
class Verdict:
    """The judge's answer: the agent (a file agent or a built-in) and how sure, 0–1."""

    agent: str
    probability: float
    """For a file agent: the model's probability that it is for it; for a built-in: (1 − the best file agent's)
    × the built-in's blended share."""
    candidate: str | None
    """The file agent the meaning pointed to (None without file agents)."""
    candidate_probability: float
    builtin: dict[str, float]
    """The blended shares of chat, react and plan."""
    factors: dict[str, float] = field(default_factory=dict)


def blend(classifier: Sequence[float], head: Sequence[float] | None) -> dict[str, float]:
    """The built-ins' shares: the classifier's, times the head's to the power :data:`HEAD_WEIGHT`, normalised."""
    if head is None:
        return dict(zip(BUILTINS, classifier, strict=True))
    logs = [math.log(c + 1e-9) + HEAD_WEIGHT * math.log(h + 1e-9) for c, h in zip(classifier, head, strict=True)]
    top = max(logs)
    exps = [math.exp(v - top) for v in logs]
    total = sum(exps)
    return {label: e / total for label, e in zip(BUILTINS, exps, strict=True)}


def factors(
    evidence: Evidence, rules: RuleResult, classifier: Sequence[float], length: int
) -> tuple[AgentEvidence, dict[str, float]] | None:
    """The factors for the agent closest by meaning (None without file agents)."""
    if not evidence.agents:
        return None
    ranked = sorted(evidence.agents, key=lambda a: a.z, reverse=True)
    best = ranked[0]
    others = ranked[1:]
    hit = rules.hits.get(best.name)
    kind = best.utterance.kind if best.utterance is not None else ""
    values = {
        "z": best.z,
        "z_lead": best.z - (others[0].z if others else 0.0),
        "closeness": best.closeness,
        "closeness_lead": best.closeness - max((o.closeness for o in others), default=0.0),
        "by_example": 1.0 if kind in ("example", "correction") else 0.0,
        "keywords": float(min(len(hit.keywords), 3)) if hit else 0.0,
        "patterns": float(min(len(hit.patterns), 1)) if hit else 0.0,
        **{f"classifier_{label}": float(p) for label, p in zip(BUILTINS, classifier, strict=True)},
        **{f"meaning_{label}": float(p) for label, p in zip(BUILTINS, evidence.head, strict=True)},
        **{f"near_{label}": float(z) for label, z in zip(BUILTINS, evidence.builtin_z, strict=True)},
        "length": min(length, 500) / 500,
        "over_p99": best.closeness - best.p99,
        "neighbours": best.neighbours,
        "neighbours_lead": best.neighbours - max((o.neighbours for o in others), default=0.0),
        "nearest": evidence.nearest,
    }
    return best, values


class Judge:
    """The shipped model of factors → probability (gradient-boosted trees, evaluated in plain Python)."""

    def __init__(self, data: dict[str, Any]) -> None:
        if data.get("format") != JUDGE_FORMAT:
            raise ValueError(f"not a {JUDGE_FORMAT} artefact: {data.get('format')!r}")
        if tuple(data["factors"]) != FACTORS:
            raise ValueError(
                "the judge was trained on other factors than this code computes: run scripts/train_judge.py"
            )
        self.meta = {k: v for k, v in data.items() if k != "trees"}
        self.init = float(data["init"])
        self.rate = float(data["rate"])
        self.threshold = float(data.get("threshold", 0.5))
        self.trees = [
            (tree["feature"], tree["threshold"], tree["left"], tree["right"], tree["value"]) for tree in data["trees"]
        ]

    @classmethod
    def load(cls, path: Path | None = None) -> Judge:
        return cls(json.loads((path or JUDGE_PATH).read_text(encoding="utf-8")))

    def probability(self, values: dict[str, float]) -> float:
        x = [values[name] for name in FACTORS]
        raw = self.init
        for feature, threshold, left, right, value in self.trees:
            node = 0
            while left[node] >= 0:
                node = left[node] if x[feature[node]] <= threshold[node] else right[node]
            raw += self.rate * value[node]
        return 1.0 / (1.0 + math.exp(-raw))

    def decide(self, evidence: Evidence | None, rules: RuleResult, classifier: Sequence[float], length: int) -> Verdict:
        shares = blend(classifier, evidence.head if evidence is not None else None)
        builtin = max(shares, key=shares.__getitem__)
        found = factors(evidence, rules, classifier, length) if evidence is not None else None
        if found is None:
            return Verdict(builtin, shares[builtin], None, 0.0, shares)
        best, values = found
        p = self.probability(values)
        if p >= self.threshold:
            return Verdict(best.name, p, best.name, p, shares, values)
        return Verdict(builtin, (1 - p) * shares[builtin], best.name, p, shares, values)
