"""Learning from corrections: ``/route AGENT`` after a wrong route makes the message an example of AGENT, stored,
audited, listed, removable, effective at once and seen by every process on the store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents.models.offline import OfflineModel
from agents.models.scripted import ScriptedModel
from bot.routing import Router
from bot.routing.policy import RoutePolicy

AGENTS = Path(__file__).resolve().parents[1] / "data" / "routing" / "dev" / "agents-examples"
ROUTING = {"strategy": "rule", "rule": {"learned": True, "meaning": False}, "notify": True}
TEXT = "my app dies when I click save"


async def test_a_correction_routes_the_message_there_from_now_on(make_harness: Any) -> None:
    model = ScriptedModel(["a guess", "found it: the save handler", "a guess again"])
    h = await make_harness(model, admins=["boss"], routing=ROUTING, agents={"dirs": [str(AGENTS)]})
    first = await h.say(TEXT, user="boss")
    assert "debugger" not in first[0] and first[-1] == "a guess"
    assert "for admins only" in (await h.say("/route debugger", user="u1"))[0]
    noted = (await h.say("/route debugger", user="boss"))[0]
    assert noted.startswith("Noted: “my app dies when I click save” is now an example of @debugger"), noted
    again = await h.say("My app dies when I click  SAVE", user="boss")  # case and spacing aside: the same message
    assert again[0].startswith("🤖 Auto-routing to: debugger (corrected by an admin"), again
    assert again[-1] == "found it: the save handler"
    listed = (await h.say("/route corrections", user="boss"))[0]
    assert "→ @debugger: “my app dies when I click save” (by boss," in listed
    key = listed.split("\n")[1].split(" ")[0]
    assert (await h.say("/route debugger", user="boss"))[0].startswith("Already noted")
    audit = await h.gateway.runs.audit_log()
    assert [(a["actor"], a["scope"], a["name"]) for a in audit][0] == ("boss", "routing:corrections", key)
    assert "no correction 'c000000'" in (await h.say("/route forget c000000", user="boss"))[0]
    assert (await h.say(f"/route forget {key}", user="boss"))[0].startswith(f"Forgot correction {key}")
    assert "debugger" not in (await h.say(TEXT, user="boss"))[0], "forgotten: routed as before"
    assert "No routing corrections yet" in (await h.say("/route corrections", user="boss"))[0]
    model.assert_complete()


async def test_corrections_survive_a_restart_and_reach_another_process(make_harness: Any) -> None:
    model = ScriptedModel(["a guess"])
    h = await make_harness(model, admins=["boss"], routing=ROUTING, agents={"dirs": [str(AGENTS)]})
    await h.say(TEXT, user="boss")
    await h.say("/route translator", user="boss")
    await h.say("/route debugger", user="boss")  # changed its mind: the same correction, another agent
    # Another process's router reads them from the shared store (SQLite is one process's: a second router on the
    # same store stands in for a worker on PostgreSQL; settings changes are announced to those, see bot/store).
    g = h.gateway
    other = RoutePolicy(
        g.settings.routing,
        g.store,
        g.catalog,
        Router(g.catalog.targets(), OfflineModel()),
        route_chars=g.settings.limits.route_chars,
        origin=g.settings.origin,
        load_agents=lambda: g.catalog,
    )
    decision = await other.decide(h.chat("elsewhere"), TEXT)
    assert (decision.agent, decision.factors["correction"]["text"]) == ("debugger", TEXT)
    await h.restart(ScriptedModel(["after the restart"]), None)
    assert (await h.say(TEXT, user="boss"))[0].startswith("🤖 Auto-routing to: debugger")
    audit = [(a["name"], a["old"], a["new"]) for a in await h.gateway.runs.audit_log()]
    assert len([a for a in audit if a[0].startswith("c")]) == 2, audit


async def test_nothing_to_correct_and_usage(make_harness: Any) -> None:
    h = await make_harness(
        ScriptedModel(["chat answer"]), admins=["boss"], routing=ROUTING, agents={"dirs": [str(AGENTS)]}
    )
    assert "no routed message here to correct" in (await h.say("/route debugger", user="boss"))[0]
    await h.say("@chat hello there", user="boss")
    assert "no routed message here to correct" in (await h.say("/route debugger", user="boss"))[0], "@name: not routed"
    assert "/route AGENT" in (await h.say("/route", user="boss"))[0]
    dry = (await h.say("/route my app dies when I click save", user="boss"))[0]
    assert "strategy: rule" in dry and "confidence: 0." in dry, "a dry run, as before"
    await asyncio.sleep(0)


async def test_a_correction_generalises_by_meaning(make_harness: Any) -> None:
    """With the encoder, a message close in meaning to a correction goes where it says."""
    model = ScriptedModel(["first", "second"])
    routing = {**ROUTING, "rule": {"learned": True, "meaning": True}}
    h = await make_harness(model, admins=["boss"], routing=routing, agents={"dirs": [str(AGENTS)]})
    assert await asyncio.to_thread(h.gateway.router.prepare, 300)
    await h.say("book me a table for two at an Italian place tonight", user="boss")
    await h.say("/route sql-helper", user="boss")  # an odd correction, so that only the correction explains it
    await asyncio.to_thread(h.gateway.router.prepare, 300)  # placed on a thread; the exact text applies at once
    out = await h.say("book me a table for two at an Italian restaurant tonight", user="boss")
    assert out[0].startswith("🤖 Auto-routing to: sql-helper (corrected by an admin"), out
