"""With a model key, hybrid asks the model only when the offline decision is unsure, and the model sees each agent's
description and examples: counted over 100 labelled messages against the fake OpenAI endpoint."""

from __future__ import annotations

from pathlib import Path

from agents.models.openai_compat import OpenAIModel
from agents.spec import load_agents
from bot.config.settings import RoutingSection
from bot.routing import Router, targets_from, transfer_tool_name
from bot.routing.evaluate import read_labelled
from bot.routing.offline import Meaning
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "tests" / "data" / "routing" / "dev"
CONFIG = RoutingSection.model_validate({"strategy": "hybrid"})


async def test_hybrid_asks_the_model_only_when_unsure(openai_server: FakeOpenAI) -> None:
    builtin = load_agents(ROOT / "bot" / "defaults" / "agents", ROOT / "no-user", [])
    files = load_agents(ROOT / "no-builtins", ROOT / "no-user", [DEV / "agents-examples"])
    targets = targets_from([*builtin.specs.values(), *files.specs.values()])
    model = OpenAIModel("gpt-test", "", base_url=openai_server.base_url, backoff_base_s=0.001, backoff_max_s=0.01)
    meaning = Meaning.start("use")
    router = Router(targets, model, meaning=meaning)
    assert router.prepare(300), meaning.state
    rows = read_labelled(DEV / "messages.tsv")[::3][:100]  # every third: all kinds, all languages
    unsure = []
    for label, text in rows:  # the offline decision, as hybrid sees it first
        guess = await router.decide(text, CONFIG, "rule")
        if guess.agent is None or guess.confidence < CONFIG.rule.confidence_threshold:
            unsure.append((label, text))
    for label, _ in unsure:  # the model answers each question with the labelled agent
        openai_server.call(transfer_tool_name(label), {"reason": "fits"})
    asked = 0
    for label, text in rows:
        d = await router.decide(text, CONFIG, "hybrid")
        if d.method == "llm":
            asked += 1
            assert d.agent == label and d.confidence == 1.0 and d.factors["asked"] == "the model"
    try:
        assert asked == len(unsure) == len(openai_server.requests)
        assert 0 < asked <= 35, f"{asked} model calls for 100 messages"
        if openai_server.requests:
            sent = openai_server.requests[0].body["tools"]
            tools = {t["function"]["name"]: t["function"]["description"] for t in sent}
            debugger = tools[transfer_tool_name("debugger")]
            assert "Figures out why my code crashes" in debugger and "Requests it takes, for example:" in debugger
    finally:
        await model.aclose()
    print(f"hybrid: {asked} model calls for {len(rows)} messages")  # docs/agents/routing.md's figure (pytest -s)
