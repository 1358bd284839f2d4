"""How well the gateway's router sends messages where they belong, measured honestly.

The router as the gateway builds it (``rule`` strategy: the shipped classifier for chat / react / plan, file
agents by their triggers with ``agent_min_score`` and ``agent_margin``), with the built-in agents and the
example file agents of ``config/agents`` loaded, on labelled files the classifier was not trained on:
``tests/data/routing-dev.tsv`` (and ``tests/data/routing-heldout.tsv``, written separately).  Reports
accuracy, per-class accuracy, the confusion matrix and the misses per file; ``--cv`` adds the 5-fold
cross-validation of the training corpus (``scripts/train_router.py``); the same files with the design's
``debug-analyzer`` added (``with_debug_analyzer``: a keyword agent at ``rule.strong_priority``, so one of its
words takes a message unless the classifier is ``rule.classifier_sure``); and the routing latency p50/p99
over the files' messages, plus a 2 KB and a 16 KB message (linear in length: the classifier reads a
bounded prefix, the triggers scan the routed prefix).  Prints ONE JSON line.

    python bench/routing_accuracy.py [--cv] [FILE.tsv ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runnable from a checkout

from agents.models.offline import OfflineModel  # noqa: E402
from bench.routing_classifier import cross_validation, percentile  # noqa: E402
from bot.config.settings import load_settings  # noqa: E402
from bot.gateway.runtime import tune_process  # noqa: E402
from bot.routing import Router  # noqa: E402
from bot.routing.offline import Meaning  # noqa: E402
from bot.routing.rule import RouteTarget  # noqa: E402
from bot.runs.catalog import AgentCatalog  # noqa: E402
from channels.registry import PLUGINS  # noqa: E402, F401  (installs the channels' settings sections)

LABELS = ("chat", "react", "plan")
DEBUG_KEYWORDS = ("bug", "error", "crash", "exception", "stack trace")
FILES = (ROOT / "tests" / "data" / "routing-dev.tsv", ROOT / "tests" / "data" / "routing-heldout.tsv")


def rows_of(path: Path) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if "\t" in line and not line.startswith("#"):
            label, text = line.split("\t", 1)
            rows.append((label.strip(), text.strip()))
    return rows


async def evaluate(router: Router, config: Any, rows: list[tuple[str, str]]) -> tuple[dict[str, Any], list[float]]:
    agents = [*LABELS, "(other)"]
    confusion = [[0] * len(agents) for _ in LABELS]
    misses, latencies = [], []
    for label, text in rows:
        started = time.perf_counter()
        decision = router.apply_fallback(await router.decide(text, config, "rule"), config)
        latencies.append((time.perf_counter() - started) * 1e6)
        got = decision.agent if decision.agent in LABELS else "(other)"
        confusion[LABELS.index(label)][agents.index(got)] += 1
        if got != label:
            misses.append(f"{label}->{decision.agent}: {text}")
    per_class = {label: round(confusion[i][i] / max(1, sum(confusion[i])), 4) for i, label in enumerate(LABELS)}
    report = {
        "messages": len(rows),
        "accuracy": round(sum(confusion[i][i] for i in range(len(LABELS))) / max(1, len(rows)), 4),
        "per_class": per_class,
        "confusion": {"truth_rows": list(LABELS), "predicted_columns": agents, "counts": confusion},
        "misses": misses,
    }
    return report, latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--cv", action="store_true")
    parser.add_argument("--no-meaning", action="store_true", help="triggers and the classifier only (no encoder)")
    args = parser.parse_args()
    examples = {"agents": {"dirs": [str(ROOT / "config" / "agents")]}}
    settings = load_settings(None, env={}, user_config=ROOT / "no-user.yaml", overrides=examples)
    catalog = AgentCatalog.load(settings.agents, settings.plan)
    meaning = None if args.no_meaning else Meaning.start(settings.routing.rule.encoder)
    router = Router(catalog.targets(), OfflineModel(), meaning=meaning)
    if meaning is not None and not router.prepare(300):
        raise SystemExit(f"the sentence encoder is {meaning.state}")
    tune_process(settings.runtime)  # as `bot run` does: the collector thresholds and freeze
    config = settings.routing
    report: dict[str, Any] = {"agents": sorted(catalog.agents), "encoder": meaning.state if meaning else "off"}
    latencies: list[float] = []
    for path in args.files or FILES:
        result, spent = await evaluate(router, config, rows_of(path))
        report[path.name] = result
        latencies += spent
    # The design's debug-analyzer (one keyword of bug, error, crash… at a strong priority) beside them: which of
    # the labelled messages it takes from the built-ins (rule.strong_priority / rule.classifier_sure decide).
    analyzer = RouteTarget("debug-analyzer", keywords=DEBUG_KEYWORDS, priority=config.rule.strong_priority)
    with_analyzer = Router([*catalog.targets(), analyzer], OfflineModel(), meaning=meaning)
    with_analyzer.prepare(300)
    report["with_debug_analyzer"] = {}
    for path in args.files or FILES:
        result, _ = await evaluate(with_analyzer, config, rows_of(path))
        report["with_debug_analyzer"][path.name] = {"accuracy": result["accuracy"], "misses": result["misses"]}
    for _ in range(4):  # steady state
        for _, text in rows_of(FILES[0]):
            started = time.perf_counter()
            await router.decide(text, config, "rule")
            latencies.append((time.perf_counter() - started) * 1e6)
    sized = {}
    for name, text in {"2 KB": "please check the logs and tell me what failed " * 45, "16 KB": "word " * 3300}.items():
        runs = []
        for _ in range(20):
            started = time.perf_counter()
            await router.decide(text[: settings.limits.route_chars], config, "rule")
            runs.append((time.perf_counter() - started) * 1e6)
        sized[name] = round(statistics.median(runs), 1)
    report["route_us"] = {
        "p50": round(percentile(latencies, 0.5), 1),
        "p99": round(percentile(latencies, 0.99), 1),
        "samples": len(latencies),
        "sized_median": sized,
    }
    if args.cv:
        report["cv"] = cross_validation()
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
