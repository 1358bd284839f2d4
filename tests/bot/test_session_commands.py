"""The commands people expect from other bots: /new, /status, /model (admins switch the chat's model), /stop."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.models.base import ModelRequest, ModelResponse, Usage
from agents.models.scripted import ScriptedModel, call
from agents.tools.base import tool
from tests.fakes.openai_server import FakeOpenAI
from tests.waiting import CEILING_S


def counted(text: str) -> Any:
    def answer(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=text, usage=Usage(input_tokens=100, output_tokens=20), model="scripted")

    return answer


async def test_new_starts_a_fresh_conversation(make_harness: Any) -> None:
    seen: list[int] = []

    def answer(request: ModelRequest) -> str:
        seen.append(len(request.messages))
        return "ok"

    h = await make_harness(ScriptedModel([answer, answer, answer]))
    await h.say("@chat one")
    await h.say("@chat two")
    [fresh] = await h.say("/new")
    assert fresh.startswith("🆕 New conversation") and "What I remember about you stays" in fresh
    assert await h.gateway.store.history(str(h.chat())) == []
    await h.say("@chat three")
    assert seen[1] > seen[0] and seen[2] == seen[0], "the model sees none of the earlier turns"


async def test_status_says_model_agent_routing_queue_pending_and_usage(make_harness: Any) -> None:
    @tool(risk="medium", confirm=True)
    async def deploy(env: str) -> str:
        """Deploy."""
        return "deployed"

    model = ScriptedModel([counted("hello"), call("deploy", {"env": "prod"}, id="d1")])
    h = await make_harness(model, tools=[deploy], admins=["u1"])
    [before] = await h.say("/status")
    assert "• agent: no request here yet" in before and "• pending: nothing" in before
    await h.say("@chat hi")
    await h.say("@react deploy it")
    [status] = await h.say("/status")
    lines = status.splitlines()
    assert lines[0] == "Status of console:c1:"
    assert lines[1] == "• model: scripted"
    assert lines[2].startswith("• agent: react (explicit") and "answered the last request" in lines[2]
    assert lines[3] == "• routing: rule (from override)"
    assert lines[4] == "• queue: 0 messages waiting here"
    assert lines[5].startswith("• pending: a tool confirm asked ") and "(/pending shows it)" in lines[5]
    assert lines[6].startswith("• usage today: you 120 tokens (1 model call") and "this chat 120 tokens" in lines[6]
    await h.say("/cancel")


async def test_model_lists_and_an_admin_switches_this_chats_model(make_harness: Any, openai_server: FakeOpenAI) -> None:
    main = ScriptedModel(["from the main model", "main again", "main in another chat"])
    providers = {"openai": {"base_url": openai_server.base_url}}
    model_section = {"providers": providers, "fallbacks": ["openai/gpt-spare"]}
    h = await make_harness(main, admins=["boss"], model=model_section)
    [listing] = await h.say("/model")
    assert "openai/gpt-spare - fallback" in listing and "/model NAME" in listing
    assert await h.say("/model openai/gpt-spare", user="u2") == ["Only admins switch the model; /model lists them."]
    assert "cannot be used here" in (await h.say("/model gemini/gemini-x", user="boss"))[0], "Gemini has no key"
    [switched] = await h.say("/model gpt-spare", user="boss")
    assert switched.startswith("This chat now uses openai/gpt-spare")
    openai_server.reply("from the switched model")
    assert await h.say("@chat hello") == ["from the switched model"]
    assert openai_server.requests[0].body["model"] == "gpt-spare"
    assert await h.say("@chat hi", chat=h.chat("other")) == ["from the main model"], "other chats keep theirs"
    assert "openai/gpt-spare (set for this chat)" in (await h.say("/status"))[0]
    entry = (await h.gateway.runs.audit_log(1))[0]
    assert (entry["actor"], entry["name"], entry["new"]) == ("boss", "model", "openai/gpt-spare")
    assert (await h.say("/model reset", user="boss"))[0].startswith("This chat uses the configured model again")
    assert await h.say("@chat hello") == ["main again"]
    assert await h.say("@chat hey", chat=h.chat("other")) == ["main in another chat"]


async def test_stop_stops_the_running_request(make_harness: Any) -> None:
    started, never = asyncio.Event(), asyncio.Event()

    @tool(risk="low")
    async def crawl(site: str) -> str:
        """Crawl a site (slowly)."""
        started.set()
        await never.wait()
        return "crawled"

    h = await make_harness(ScriptedModel([call("crawl", {"site": "example.org"}, id="c1")]), tools=[crawl])
    await h.gateway.inbox.submit(h.message("@react crawl example.org"))
    await asyncio.wait_for(started.wait(), CEILING_S)
    assert "🚫 Stopped the running request." in await h.say("/stop")
    assert await h.say("/stop") == ["Nothing is running here."]
    assert "/stop" in (await h.say("/help"))[0]
