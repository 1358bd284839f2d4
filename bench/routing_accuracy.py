"""Accuracy of the default rule triggers on a labelled file (label TAB message per line).

Prints one JSON line: plain accuracy, and leave-one-out accuracy, where for each
held-out message every keyword or pattern that matches no *other* message of the
file is removed first (a trigger only that message supports would be memorised,
not learned). Unmatched messages go to the fallback agent (``chat``), as with
the ``rule`` strategy and ``fallback: default_agent``.

    python bench/routing_accuracy.py tests/data/routing-dev.tsv
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from agents.spec import load_agents
from bot.routing.rule import RouteTarget, RuleRouter, is_cjk
from bot.runs.catalog import builtin_agents_dir

FALLBACK = "chat"


def matches(trigger: str, text: str, pattern: bool) -> bool:
    if pattern:
        return re.search(trigger, text, re.IGNORECASE) is not None
    folded = text.casefold()
    kw = trigger.casefold()
    if is_cjk(kw):
        return kw in folded
    return re.search(r"(?<!\w)" + re.escape(kw) + r"(?!\w)", folded) is not None


def predict(router: RuleRouter, text: str) -> str:
    best = router.route(text).best
    return best.agent if best is not None else FALLBACK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    args = parser.parse_args()
    rows = [line.split("\t", 1) for line in args.file.read_text(encoding="utf-8").splitlines() if "\t" in line]
    specs = load_agents(builtin_agents_dir(), None).specs
    targets = [
        RouteTarget(s.name, keywords=s.triggers.keywords, patterns=s.triggers.patterns, priority=s.triggers.priority)
        for s in specs.values()
    ]
    router = RuleRouter(targets)
    plain = sum(predict(router, text) == label for label, text in rows)
    loo = 0
    misses: Counter[str] = Counter()
    for i, (label, text) in enumerate(rows):
        others = [t for j, (_, t) in enumerate(rows) if j != i]

        def supported(trigger: str, pattern: bool, others: list[str] = others) -> bool:
            return any(matches(trigger, other, pattern) for other in others)

        held_out = [
            RouteTarget(
                t.name,
                keywords=tuple(k for k in t.keywords if supported(k, False)),
                patterns=tuple(p for p in t.patterns if supported(p, True)),
                priority=t.priority,
            )
            for t in targets
        ]
        got = predict(RuleRouter(held_out), text)
        loo += got == label
        if got != label:
            misses[f"{label}->{got}"] += 1
    sizes = {t.name: {"keywords": len(t.keywords), "patterns": len(t.patterns)} for t in targets}
    print(
        json.dumps(
            {
                "messages": len(rows),
                "accuracy": round(plain / len(rows), 3),
                "leave_one_out_accuracy": round(loo / len(rows), 3),
                "loo_errors": dict(misses),
                "triggers": sizes,
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
