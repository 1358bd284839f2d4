"""Routing by meaning, offline: the sentence encoder (the real one, loaded once per test process), the agents' own
words, traps, six languages, long texts, word forms, every factor, and the shipped example agents."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.models.offline import OfflineModel
from agents.spec import load_agents
from bot.config.settings import RoutingSection
from bot.routing import Router, targets_from
from bot.routing.offline import Meaning
from bot.routing.request import request_of
from bot.routing.rule import RouteTarget, RuleRouter
from bot.runs.catalog import AgentCatalog

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "tests" / "data" / "routing" / "dev"
LOAD_S = 300  # a loaded CI machine: the encoder takes about 1.5 s alone


def _targets(*dirs: Path) -> list[RouteTarget]:
    builtin = load_agents(ROOT / "bot" / "defaults" / "agents", ROOT / "no-user", [])
    files = load_agents(ROOT / "no-builtins", ROOT / "no-user", list(dirs))
    assert not files.errors, files.errors
    return targets_from([*builtin.specs.values(), *files.specs.values()])


@pytest.fixture(scope="module")
def meaning() -> Meaning:
    found = Meaning.start("use")
    assert found.wait(LOAD_S), found.state
    return found


def router_for(meaning: Meaning, *dirs: Path) -> Router:
    router = Router(_targets(*dirs), OfflineModel(), meaning=meaning)
    assert router.prepare(LOAD_S)
    return router


RULE = RoutingSection.model_validate({})


async def route(router: Router, text: str, strategy: str = "rule") -> Any:
    return router.apply_fallback(await router.decide(text, RULE, strategy), RULE)


async def test_paraphrases_languages_and_traps(meaning: Meaning) -> None:
    router = router_for(meaning, DEV / "agents-examples")
    cases = {
        "my app dies when I click save": "debugger",  # no trigger word
        "I think I caught a stomach bug": "chat",  # a trigger word in another sense
        "¿Cómo se dice 'buenos días' en alemán?": "translator",
        "我的查询太慢了，帮我优化这个 SQL": "sql-helper",
        "Wie schreibe ich eine Abfrage, die alle Kunden ohne Bestellungen findet?": "sql-helper",
        "переведи на английский: спасибо за помощь": "translator",
        "cut a new version and write the changelog": "release-manager",
        "plan a weekend trip to Paris": "plan",
        "hi": "chat",
    }
    for text, agent in cases.items():
        d = await route(router, text)
        assert d.agent == agent, (text, d.agent, d.note)
        assert 0 <= d.confidence <= 1 and d.factors["encoder"] == "ready"


async def test_every_factor_is_shown(meaning: Meaning) -> None:
    router = router_for(meaning, DEV / "agents-examples")
    d = await route(router, "my script crashes with a KeyError when the list is empty")
    f = d.factors
    assert d.agent == "debugger" and d.method == "rule"
    assert set(f["classifier"]) == set(f["meaning"]) == set(f["builtins"]) == {"chat", "react", "plan"}
    assert f["candidate"]["agent"] == "debugger" and f["candidate"]["probability"] == d.confidence
    assert f["candidate"]["closest"]["kind"] in ("example", "description", "keywords")
    assert f["runner_up"]["agent"] != "debugger" and "z" in f["runner_up"]
    assert f["triggers"]["debugger"]["keywords"] == ["crashes"] or "crash" in f["triggers"]["debugger"]["keywords"]
    assert "design_score" in f["triggers"]["debugger"] and set(f["judge"]) >= {"z", "keywords", "neighbours"}


async def test_the_shipped_examples_win_on_their_own_words(meaning: Meaning) -> None:
    """The issue's three: each went to chat when priority weighed the trigger score."""
    router = router_for(meaning, ROOT / "config" / "agents")
    assert (await route(router, "please update the README and the docs for the new flag")).agent == "docs-writer"
    assert (await route(router, "fix this bug with a small patch, a hotfix is fine")).agent == "code-fixer"
    assert (await route(router, "I get a ValueError when I call parse()")).agent == "debugger"
    assert (await route(router, "How do I say no politely?")).agent == "chat"


async def test_long_texts_are_routed_by_their_request(meaning: Meaning) -> None:
    router = router_for(meaning, DEV / "agents-examples")
    story = (
        "I moved to Lisbon for a new job eight months ago. The work is fine and my colleagues are friendly, but "
        "outside the office I barely talk to anyone. Weekends are the hardest: I walk around the city, sit in cafés, "
        "and go home without having had a single real conversation. Back home I had a big group of friends I had "
        "known since school. I am not very outgoing and I find it awkward to start conversations with strangers. "
        "How do I make friends in a new city as an adult?"
    )
    assert len(story) > 400 and (await route(router, story)).agent == "chat", "not a plan for its length"
    log = "\n".join(f"2026-12-07 10:0{i}:00 ERROR worker-{i} connection reset by peer at pool.py:88" for i in range(9))
    crash = f'{log}\nTraceback (most recent call last):\n  File "app.py", line 3\nValueError: bad\nwhy does it crash?'
    assert request_of(crash) == "why does it crash?"
    d = await route(router, crash)
    assert d.agent == "debugger" and d.factors["request"] == "why does it crash?"


def test_request_of_keeps_short_texts_and_prose() -> None:
    assert request_of("hello") == "hello"
    pasted = "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.total > 100;\n" * 8
    assert request_of("make this faster please:\n" + pasted) == "make this faster please:"
    assert request_of(pasted) == pasted[:300], "no prose: the head of what was pasted"
    story = "I moved to a new city last year and I still have no friends here. " * 8 + "What should I do?"
    shown = request_of(story)
    assert shown.startswith("I moved") and shown.endswith("What should I do?") and len(shown) < 340


def test_keywords_match_their_word_forms() -> None:
    rules = RuleRouter([RouteTarget("debugger", keywords=("crash", "error", "bug", "Fehler", "ошибка"), priority=85)])
    for text, found in {
        "it crashes on start": ["crash"],
        "two errors and three bugs": ["bug", "error"],
        "tengo muchos errores": ["error"],
        "zwei Fehlern im Log": ["Fehler"],
        "какие-то ошибки в логе": ["ошибка"],
    }.items():
        best = rules.route(text).best
        assert best is not None and best.keywords == found, (text, best)
    assert rules.route("a bugle and a crashing wave").best is not None, "crashing is crash"
    assert rules.route("the errand").best is None and rules.route("bugle").best is None
    twice = rules.route("bug bugs")
    assert twice.best is not None and twice.best.raw == 10, "one keyword, however many forms"


async def test_without_the_encoder_priority_does_not_weigh_the_threshold() -> None:
    """Offline without meaning: a pattern (20) wins at priority 60 as at 100; the design's score is shown."""
    release = RouteTarget("release-manager", "", "", ("changelog",), (r"\brelease notes?\b",), 60)
    router = Router([*_targets(), release], OfflineModel())
    d = await router.decide("draft the release notes for 2.3", RULE, "rule")
    assert d.agent == "release-manager" and d.factors["encoder"] == "none"
    assert d.factors["triggers"]["release-manager"] == {
        "keywords": [],
        "patterns": [r"\brelease notes?\b"],
        "raw": 20.0,
        "design_score": 12.0,
    }
    assert 0 <= d.confidence <= 1


async def test_first_messages_do_not_wait_for_the_encoder() -> None:
    """A router whose encoder is still loading decides by triggers and the classifier at once."""
    from bot.routing.encoder import EncoderLoader

    loader = EncoderLoader("use")  # not started: it stays "loading"
    slow = Meaning(loader)
    router = Router(_targets(DEV / "agents-examples"), OfflineModel(), meaning=slow)
    d = await route(router, "what time is it in Tokyo?")
    assert d.agent == "react" and d.factors["encoder"] == "loading"


async def test_the_catalog_and_the_eval_file_agree(meaning: Meaning, make_settings: Any) -> None:
    """``bot route --eval``'s report on the dev file: accuracy, precision and recall, confusion, misroutes."""
    from bot.cli.route import route_messages

    settings = make_settings(agents={"dirs": [str(DEV / "agents-examples")]}, routing={"strategy": "rule"})
    assert {"debugger", "translator"} <= set(AgentCatalog.load(settings.agents, settings.plan).agents)
    sample = Path(settings.store.data_dir).parent / "sample.tsv"
    sample.write_text(
        "# label TAB message\n"
        "debugger\tmy app dies when I click save\n"
        "chat\tI think I caught a stomach bug\n"
        "translator\tIch brauche das auf Französisch: Wir sehen uns morgen\n"
        "sql-helper\tgive me a query for the ten biggest orders\n"
        "release-manager\t\\nwhat goes in the changelog for 2.4?\n",
        encoding="utf-8",
    )
    import contextlib
    import io
    import json

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = await route_messages(settings, [], None, True, sample)
    assert code == 0
    report = json.loads(out.getvalue())
    assert report["messages"] == 5 and 0 <= report["accuracy"] <= 1
    assert set(report["per_agent"]["debugger"]) == {"messages", "precision", "recall"}
    assert sum(sum(row.values()) for row in report["confusion"].values()) == 5
    assert len(report["misroutes"]) == 5 - round(report["accuracy"] * 5)
    await asyncio.sleep(0)
