"""Routing: rule scoring, CJK/Latin matching, LLM choice through Gemini, hybrid, fallbacks, targeting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.models.base import ModelError
from agents.models.gemini import GeminiModel
from agents.models.offline import OfflineModel
from agents.models.scripted import ScriptedModel, call, calls
from bot.config.settings import RoutingSection
from bot.routing import Router, parse_target
from bot.routing.rule import RouteTarget, RuleRouter, required_literal
from tests.fakes.gemini_server import call_body, function_call_part

TARGETS = [
    RouteTarget("chat", "Chat", "General conversation", ("hello", "joke", "你好"), (), 100),
    RouteTarget(
        "react", "Tools", "Uses tools: time, files, web", ("time", "read", "file", "文件", "读取"), (r"https?://",), 100
    ),
    RouteTarget("plan", "Planner", "Multi-step plans", ("plan", "step by step", "规划"), (r"\bweek(ly)?\b",), 100),
]


def config(**kw: Any) -> RoutingSection:
    """Routing by the targets' trigger keywords (the classifier off), unless ``rule`` says otherwise."""
    kw.setdefault("rule", {})
    kw["rule"].setdefault("learned", False)
    return RoutingSection.model_validate(kw)


def learned(**kw: Any) -> RoutingSection:
    return config(rule={"learned": True, **kw.pop("rule", {})}, **kw)


def test_scores_keyword_and_pattern_times_priority() -> None:
    router = RuleRouter(TARGETS)
    r = router.route("Read the file at https://example.org")
    assert r.best is not None and r.best.agent == "react"
    assert r.best.score == 10 + 10 + 20 and r.best.confidence == 40
    assert r.best.keywords == ["file", "read"] and r.best.patterns == [r"https?://"]
    low = RuleRouter([RouteTarget("a", keywords=("x", "y"), priority=50)]).route("x y")
    assert low.best is not None and low.best.score == 10.0


def test_confidence_is_capped_at_100() -> None:
    t = RouteTarget("a", keywords=tuple("abcdefghijkl"), priority=100)
    r = RuleRouter([t]).route(" ".join("abcdefghijkl"))
    assert r.best is not None and r.best.score == 120 and r.best.confidence == 100


def test_latin_keywords_match_whole_words_case_insensitively() -> None:
    router = RuleRouter(TARGETS)
    assert router.route("TIME please").best.agent == "react"  # type: ignore[union-attr]
    assert router.route("sometimes I wonder").best is None, "no match inside a word"
    assert router.route("let's go step by step").best.agent == "plan"  # type: ignore[union-attr]
    assert router.route("a stepbystep guide").best is None


def test_cjk_keywords_match_as_substrings() -> None:
    router = RuleRouter(TARGETS)
    r = router.route("帮我读取这个文件")
    assert r.best is not None and r.best.agent == "react" and sorted(r.best.keywords) == ["文件", "读取"]
    assert router.route("你好呀").best.agent == "chat"  # type: ignore[union-attr]


def test_ties_are_deterministic_by_priority_then_order() -> None:
    a = RouteTarget("a", keywords=("deploy",), priority=60)
    b = RouteTarget("b", keywords=("deploy", "now"), priority=30)
    c = RouteTarget("c", keywords=("deploy",), priority=60)
    # a: 6, b: 6, c: 6 → equal scores; a and c have higher priority; a was loaded first.
    assert RuleRouter([b, c, a]).route("deploy now").best.agent == "c"  # type: ignore[union-attr]
    assert RuleRouter([a, b, c]).route("deploy now").best.agent == "a"  # type: ignore[union-attr]


def test_patterns_with_groups_and_literals() -> None:
    assert required_literal(r"\bdeploy\s+(?:the\s+)?build\b") == "deploy"
    assert required_literal(r"[abc]+") is None
    t = RouteTarget("files", patterns=(r"(\w+)\.txt\b", r"(?P<n>\d+) lines", r"(a)\1"), priority=100)
    r = RuleRouter([t]).route("show 10 lines of notes.txt, aa")
    assert r.best is not None and r.best.score == 60


def test_invalid_pattern_is_an_error_at_load() -> None:
    import re

    with pytest.raises(re.error):
        RuleRouter([RouteTarget("bad", patterns=("(unclosed",))])


async def test_rule_strategy_takes_best_score_above_zero() -> None:
    router = Router(TARGETS, ScriptedModel([]))
    d = await router.decide("what time is it", config(), "rule")
    assert (d.agent, d.method, d.confidence) == ("react", "rule", 0.1), "the design's score 10, as a share"
    d = await router.decide("nothing matches here", config(), "rule")
    assert d.agent is None and d.method == "fallback"


async def test_hybrid_uses_rule_above_threshold_and_llm_below() -> None:
    model = ScriptedModel([call("transfer_to_plan", {"reason": "multi-step"})])
    router = Router(TARGETS, model)
    cfg = config(rule={"confidence_threshold": 30})
    high = await router.decide("read the file https://x.org", cfg, "hybrid")
    assert (high.agent, high.method) == ("react", "rule")
    low = await router.decide("organise my week", cfg, "hybrid")
    assert (low.agent, low.method) == ("plan", "llm")
    assert {t.name for t in model.requests[0].tools} == {"transfer_to_chat", "transfer_to_react", "transfer_to_plan"}
    model.assert_complete()


async def test_hybrid_with_the_offline_model_trusts_any_rule_match() -> None:
    router = Router(TARGETS, OfflineModel())
    weak = await router.decide("plan my team offsite", config(), "hybrid")
    assert (weak.agent, weak.method, weak.confidence) == ("plan", "rule", 0.1)
    # No rule at all: hybrid is rule without a model that understands text; the stand-in is never asked.
    nothing = await router.decide("asdf qwer", config(), "hybrid")
    assert nothing.method == "fallback"


async def test_hybrid_llm_failure_keeps_the_rules_guess() -> None:
    router = Router(TARGETS, ScriptedModel([ModelError("quota")]))
    d = await router.decide("what time", config(), "hybrid")
    assert (d.agent, d.method) == ("react", "rule") and "quota" in d.note


async def test_llm_timeout_falls_back() -> None:
    async def slow(_req: Any) -> str:
        await asyncio.Event().wait()  # a model that never answers
        return "late"

    model = ScriptedModel([slow])
    router = Router(TARGETS, model)
    d = await router.decide("hmm", config(llm={"timeout_ms": 50}), "llm")
    assert d.agent is None and d.method == "fallback" and "did not answer within 0.05 s" in d.note
    assert router.apply_fallback(d, config()).agent == "chat"


async def test_llm_invalid_calls_fall_back() -> None:
    model = ScriptedModel(
        ["I think chat", call("transfer_to_nobody"), calls(("transfer_to_chat", {}), ("transfer_to_plan", {}))]
    )
    router = Router(TARGETS, model)
    for expected in ("0 transfer calls", "unknown function", "2 transfer calls"):
        d = await router.decide("x", config(), "llm")
        assert d.agent is None and expected in d.note
    model.assert_complete()


async def test_each_fallback() -> None:
    router = Router(TARGETS, ScriptedModel([]))
    for mode, agent in (("none", None), ("prompt_user", None), ("default_agent", "chat")):
        d = router.apply_fallback(await router.decide("zzz", config(), "rule"), config(fallback=mode))
        assert d.agent == agent and d.fallback == mode
    assert "@react" in router.agent_list() and "@plan" in router.agent_list()
    d = router.apply_fallback(await router.decide("zzz", config(default_agent="missing"), "rule"), config())
    assert d.agent == "chat"


async def test_routing_disabled_goes_to_default_agent() -> None:
    router = Router(TARGETS, ScriptedModel([]))
    d = router.apply_fallback(await router.decide("read a file", config(enabled=False), "rule"), config(enabled=False))
    assert (d.agent, d.method) == ("chat", "disabled")


def test_targeting() -> None:
    known = {"chat", "react", "plan", "code-fixer"}
    assert (t := parse_target("@react read x", known)).agent == "react" and t.text == "read x"
    assert parse_target("@code-fixer fix it", known).agent == "code-fixer"
    auto = parse_target("@auto --strategy=llm plan my week", known)
    assert auto.agent is None and auto.strategy == "llm" and auto.text == "plan my week"
    assert parse_target("@auto just route it", known).text == "just route it"
    assert parse_target("@auto --strategy=magic x", known).error is not None
    plain = parse_target("@alice can you help", known)
    assert plain.agent is None and plain.text == "@alice can you help"
    assert parse_target("email me at a@b.c", known).agent is None


async def test_llm_router_through_gemini(gemini_server: Any) -> None:
    gemini_server.reply(call_body(function_call_part("transfer_to_react", {"reason": "needs a clock"}, id="r1")))
    model = GeminiModel("gemini-test", "test-key", base_url=gemini_server.base_url, timeout_s=5, max_retries=0)
    try:
        router = Router(TARGETS, model)
        d = await router.decide("what's the hour in Lima?", config(), "llm")
    finally:
        await model.aclose()
    assert (d.agent, d.method) == ("react", "llm")
    body = gemini_server.requests[0].body
    declared = {f["name"]: f for tool in body["tools"] for f in tool["functionDeclarations"]}
    assert set(declared) == {"transfer_to_chat", "transfer_to_react", "transfer_to_plan"}
    assert "Uses tools" in declared["transfer_to_react"]["description"]
    assert "router" in body["systemInstruction"]["parts"][0]["text"]


FILE_AGENT = RouteTarget(
    "docs-writer", "Docs", "Writes documentation", ("docs", "documentation", "readme"), (r"\bdocstrings?\b",), 100
)


async def test_the_classifier_tells_the_built_ins_apart() -> None:
    router = Router(TARGETS, ScriptedModel([]))
    cases = {
        "what's the weather in Lisbon right now?": "react",
        "How do I read a file in Python?": "chat",
        "is it a good idea to plan a wedding in winter?": "chat",
        "set up the repo, then write the tests, then open a PR, in that order": "plan",
        "给运维群发一条消息说今晚十点停机维护": "react",
        "先备份数据库，再升级版本，最后验证服务": "plan",
    }
    for text, agent in cases.items():
        d = await router.decide(text, learned(), "rule")
        assert (d.agent, d.method) == (agent, "rule"), (text, d)
        assert d.confidence >= 0.65 and d.note.startswith("classifier: chat "), d


async def test_a_file_agent_needs_a_minimum_score_and_a_margin() -> None:
    """Below ``rule.strong_priority`` (here: the strong rule off) triggers must add up to win."""
    router = Router([*TARGETS, FILE_AGENT], ScriptedModel([]))
    weak = learned(rule={"classifier_sure": 0})
    stolen = await router.decide("refactor the parser, update the docs and open a PR", weak, "rule")
    assert stolen.agent == "plan" and "docs-writer's triggers scored 10" in stolen.note, "one word is not enough"
    taken = await router.decide("write the documentation and the readme", weak, "rule")
    assert (taken.agent, taken.matched_keywords) == ("docs-writer", ["documentation", "readme"])
    looser = await router.decide("refactor it and update the docs", learned(rule={"agent_min_score": 10}), "rule")
    assert looser.agent == "docs-writer"


async def test_a_strong_priority_trigger_wins_unless_the_classifier_is_very_sure() -> None:
    """The design's debug-analyzer (bug, error, crash at high priority) takes "There's a bug in the login flow"
    from the classifier's react (96 %); a prototypical built-in request (the classifier ≥ 99 %) stays built-in;
    below ``strong_priority`` one keyword is not enough; hybrid takes the strong match without asking the model."""
    analyzer = RouteTarget("debug-analyzer", "", "Finds bugs", ("bug", "error", "crash"), (), 80)
    router = Router([*TARGETS, analyzer], ScriptedModel([]))
    taken = await router.decide("There's a bug in the login flow", learned(), "rule")
    assert (taken.agent, taken.matched_keywords, taken.strong) == ("debug-analyzer", ["bug"], True)
    assert "react 9" in taken.note and "priority 80 wins below 99%" in taken.note, taken.note
    assert (await router.decide("There's a bug in the login flow", learned(), "hybrid")).agent == "debug-analyzer"
    sure = await router.decide("Show me the last 10 lines of error.log.", learned(), "rule")
    assert sure.agent == "react" and "loses to the classifier's 99%" in sure.note, sure.note
    lower = Router([*TARGETS, RouteTarget("debug-analyzer", keywords=("bug",), priority=79)], ScriptedModel([]))
    assert (await lower.decide("There's a bug in the login flow", learned(), "rule")).agent == "react"
    off = await router.decide("There's a bug in the login flow", learned(rule={"classifier_sure": 0}), "rule")
    assert off.agent == "react", "classifier_sure: 0 turns the rule off"


async def test_unrecognised_text_falls_back_and_hybrid_asks_the_model_only_when_unsure() -> None:
    model = ScriptedModel([call("transfer_to_chat", {"reason": "small talk"})])
    router = Router(TARGETS, model)
    gibberish = await router.decide("asdf qwer", learned(), "rule")
    assert gibberish.agent is None and gibberish.method == "fallback"
    sure = await router.decide("what time is it in Tokyo?", learned(), "hybrid")
    assert (sure.agent, sure.method) == ("react", "rule"), "confident: the model is not asked"
    unsure = await router.decide("asdf qwer", learned(), "hybrid")
    assert (unsure.agent, unsure.method) == ("chat", "llm")
    model.assert_complete()
    offline = Router(TARGETS, OfflineModel())
    assert (await offline.decide("asdf qwer", learned(), "hybrid")).method == "fallback", "offline: hybrid is rule"
