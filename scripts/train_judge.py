"""Train the router's judge (factors → "is this message for the agent closest in meaning?") and write it.

Reads the dev sets ``tests/data/routing/dev*/`` (each: ``messages.tsv`` and two versions of its agents,
``agents-examples/`` with ``examples:`` and ``agents-plain/`` without), computes every message's factors with the
router's own code (:func:`bot.routing.judge.factors`), runs a 5-fold cross-validation grouped by message (a
message's two versions stay in one fold), fits the final model on all of it and writes
``bot/routing/model/judge-v1.json``. The held-out set ``tests/data/routing/heldout`` is never read here: score it
with ``bot route --eval``.

Needs scikit-learn (``pip install scikit-learn``; the router itself evaluates the trees in plain Python).

    python scripts/train_judge.py            # CV + train + write
    python scripts/train_judge.py --no-write
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.spec import load_agents  # noqa: E402
from bot.routing.classifier import IntentClassifier  # noqa: E402
from bot.routing.encoder import UseEncoder  # noqa: E402
from bot.routing.evaluate import read_labelled  # noqa: E402
from bot.routing.judge import FACTORS, JUDGE_FORMAT, JUDGE_PATH, Judge, factors  # noqa: E402
from bot.routing.meaning import AgentBank, BuiltinHead, Corpus, Space  # noqa: E402
from bot.routing.request import ask_of, request_of  # noqa: E402
from bot.routing.rule import RuleRouter, targets_from  # noqa: E402

DEV = sorted(p for p in (ROOT / "tests" / "data" / "routing").glob("dev*") if (p / "messages.tsv").exists())
ROUTE_CHARS = 8192
VARIANTS = ("examples", "plain", "few2")


def rows_for(directory: Path, variant: str, encoder: UseEncoder, cache: dict[str, Any]) -> list[dict[str, Any]]:
    """``variant``: ``examples``, ``plain``, or ``fewN`` (the agents with only their first N examples: people write
    2 or 3 as often as 8, and the judge should know those too)."""
    folder = "examples" if variant.startswith("few") else variant
    registry = load_agents(ROOT / "no-builtins", ROOT / "no-user", [directory / f"agents-{folder}"])
    if registry.errors:
        raise SystemExit(f"{directory.name}/{variant}: {registry.errors}")
    targets = targets_from(list(registry.specs.values()))
    if variant.startswith("few"):
        keep = int(variant.removeprefix("few"))
        targets = [replace(t, examples=t.examples[:keep]) for t in targets]
    space = Space(AgentBank(encoder, targets), CORPUS, HEAD)
    rules = RuleRouter(targets)
    out = []
    for label, text in read_labelled(directory / "messages.tsv"):
        request = request_of(text)
        if request not in cache:
            cache[request] = encoder.encode([request])[0]
        evidence = space.evidence(cache[request])
        classifier = CLASSIFIER.probabilities(ask_of(request))[1:]
        rule = rules.route(text[:ROUTE_CHARS])
        best, values = factors(evidence, rule, classifier, len(text))  # type: ignore[misc]
        out.append(
            {
                "set": directory.name,
                "variant": variant,
                "label": label,
                "text": text,
                "candidate": best.name,
                "values": values,
                "evidence": evidence,
                "rules": rule,
                "classifier": classifier,
            }
        )
    return out


def export(model: Any, threshold: float = 0.5) -> dict[str, Any]:
    trees = []
    for (tree,) in model.estimators_:
        t = tree.tree_
        trees.append(
            {
                "feature": [int(f) for f in t.feature],
                "threshold": [round(float(v), 6) for v in t.threshold],
                "left": [int(v) for v in t.children_left],
                "right": [int(v) for v in t.children_right],
                "value": [round(float(v), 6) for v in t.value[:, 0, 0]],
            }
        )
    prior = float(model.init_.class_prior_[1])
    return {
        "format": JUDGE_FORMAT,
        "factors": list(FACTORS),
        "init": float(np.log(prior / (1 - prior))),
        "rate": float(model.learning_rate),
        "threshold": threshold,
        "trees": trees,
    }


HYPER: dict[str, Any] = {"trees": 100, "depth": 2, "rate": 0.1}


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from sklearn.ensemble import GradientBoostingClassifier

    x = np.array([[r["values"][f] for f in FACTORS] for r in rows])
    y = np.array([r["label"] == r["candidate"] for r in rows])
    model = GradientBoostingClassifier(
        n_estimators=HYPER["trees"], max_depth=HYPER["depth"], learning_rate=HYPER["rate"], random_state=7
    )
    return export(model.fit(x, y))


def score(rows: list[dict[str, Any]], judge: Judge) -> list[str]:
    return [judge.decide(r["evidence"], r["rules"], r["classifier"], len(r["text"])).agent for r in rows]


def report(rows: list[dict[str, Any]], predicted: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted({(r["set"], r["variant"]) for r in rows}):
        picked = [(r, p) for r, p in zip(rows, predicted, strict=True) if (r["set"], r["variant"]) == key]
        right = Counter(r["label"] for r, p in picked if p == r["label"])
        total = Counter(r["label"] for r, _ in picked)
        out["/".join(key)] = {
            "accuracy": round(sum(right.values()) / len(picked), 4),
            "per_label": {label: round(right[label] / n, 3) for label, n in sorted(total.items())},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--by-set", action="store_true", help="cross-validate by dev set (a new writer's agents)")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--rate", type=float, default=0.1)
    args = parser.parse_args()
    HYPER.update(trees=args.trees, depth=args.depth, rate=args.rate)
    encoder, cache = UseEncoder(), {}
    rows = [row for d in DEV for v in VARIANTS for row in rows_for(d, v, encoder, cache)]
    groups = {}
    for r in rows:
        groups.setdefault((r["set"], r["text"]), len(groups))
    sets = sorted({r["set"] for r in rows})
    fold = [sets.index(r["set"]) if args.by_set else groups[(r["set"], r["text"])] % 5 for r in rows]
    predicted = [""] * len(rows)
    for k in range(len(sets) if args.by_set else 5):
        judge = Judge(fit([r for r, f in zip(rows, fold, strict=True) if f != k]))
        held = [i for i, f in enumerate(fold) if f == k]
        for i, agent in zip(held, score([rows[i] for i in held], judge), strict=True):
            predicted[i] = agent
    artefact = fit(rows)
    artefact["trained_on"] = {
        f"{d.name}/{v}": sum(1 for r in rows if r["set"] == d.name and r["variant"] == v) for d in DEV for v in VARIANTS
    }
    result = {"cv": report(rows, predicted), "in_sample": report(rows, score(rows, Judge(artefact)))}
    artefact["cv"] = {k: v["accuracy"] for k, v in result["cv"].items()}
    if not args.no_write:
        JUDGE_PATH.write_text(json.dumps(artefact, separators=(",", ":")) + "\n", encoding="utf-8")
        result["written"] = str(JUDGE_PATH.relative_to(ROOT))
    print(json.dumps(result, indent=1))


CORPUS = Corpus.load()
HEAD = BuiltinHead.load()
CLASSIFIER = IntentClassifier.load()

if __name__ == "__main__":
    main()
