"""A trigger at a strong priority takes a message from the classifier, and the built-ins' held-out routing does not
suffer for it: with the example agents and the design's ``debug-analyzer`` (one keyword of bug, error, crash… at
``rule.strong_priority``) loaded, every labelled message of the dev and held-out files still goes where it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.models.offline import OfflineModel
from bot.config.settings import load_settings
from bot.routing import Router
from bot.routing.rule import RouteTarget
from bot.runs.catalog import AgentCatalog

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "tests" / "data" / "routing-dev.tsv", ROOT / "tests" / "data" / "routing-heldout.tsv"]


def rows(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(label.strip(), text.strip()) for label, text in (line.split("\t", 1) for line in lines if "\t" in line)]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Any:
    examples = {"agents": {"dirs": [str(ROOT / "config" / "agents")]}}
    home = tmp_path_factory.mktemp("home")
    return load_settings(None, env={}, user_config=home / "none.yaml", overrides=examples)


async def routed(router: Router, settings: Any, path: Path) -> list[str | None]:
    config = settings.routing
    return [router.apply_fallback(await router.decide(text, config, "rule"), config).agent for _, text in rows(path)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
async def test_the_design_analyzer_takes_no_labelled_message_from_the_built_ins(settings: Any, path: Path) -> None:
    catalog = AgentCatalog.load(settings.agents, settings.plan)
    before = Router(catalog.targets(), OfflineModel())
    keywords = ("bug", "error", "crash", "exception", "stack trace")
    analyzer = RouteTarget("debug-analyzer", keywords=keywords, priority=settings.routing.rule.strong_priority)
    after = Router([*catalog.targets(), analyzer], OfflineModel())
    labels = [label for label, _ in rows(path)]
    was, now = await routed(before, settings, path), await routed(after, settings, path)
    assert now == was, [(text, a, b) for (_, text), a, b in zip(rows(path), was, now, strict=True) if a != b]
    accuracy = sum(a == label for a, label in zip(now, labels, strict=True)) / len(labels)
    assert accuracy == sum(a == label for a, label in zip(was, labels, strict=True)) / len(labels)
    if path.name == "routing-dev.tsv":  # the test has teeth: one of its keywords is there, the classifier sure
        assert ("react", "Show me the last 10 lines of error.log.") in rows(path)


async def test_the_design_sentence_goes_to_the_analyzer(settings: Any) -> None:
    catalog = AgentCatalog.load(settings.agents, settings.plan)
    analyzer = RouteTarget("debug-analyzer", keywords=("bug", "error", "crash"), priority=80)
    router = Router([*catalog.targets(), analyzer], OfflineModel())
    decision = await router.decide("There's a bug in the login flow", settings.routing, "hybrid")
    assert (decision.agent, decision.matched, decision.strong) == ("debug-analyzer", ["bug"], True)
