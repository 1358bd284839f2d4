"""Long-term memory through the gateway: a fact remembered in one chat is recalled in another, /memory lists and
forgets it (gone from search), groups keep it private unless an admin turns it on, the budget holds, secrets are
refused, and an agent's session keys are kept per chat and shown in /trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.base import ModelRequest
from agents.models.scripted import call
from bot.memory.text import estimate_tokens


def tool_names(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


def memory_block(request: ModelRequest) -> str:
    system = request.system or ""
    start = system.find("What you remember about the person")
    return system[start:].split("\n\n", 1)[0] if start >= 0 else ""


async def test_remembered_in_one_chat_recalled_in_another(make_harness: Any, scripted: Any) -> None:
    model = scripted(
        call("remember", {"fact": "Is vegetarian and allergic to peanuts"}),
        "Noted: no meat, no peanuts.",
        "How about a lentil curry?",
    )
    h = await make_harness(model)
    assert await h.say("Remember that I'm vegetarian and allergic to peanuts") == ["Noted: no meat, no peanuts."]
    assert {"remember", "recall", "forget"} <= tool_names(model.requests[0]), "a chat agent gets its memory tools"
    assert "remembered as #1" in (model.requests[1].messages[-1].tool_results[0].content or "")

    other = h.chat("c2")
    assert await h.say("What should I cook tonight?", chat=other) == ["How about a lentil curry?"]
    block = memory_block(model.requests[2])
    assert "#1 Is vegetarian and allergic to peanuts" in block, model.requests[2].system
    assert all("vegetarian" not in (m.text or "") for m in model.requests[2].messages), "not history: memory"


async def test_memory_lists_and_forgets_and_the_index_forgets_too(make_harness: Any, scripted: Any) -> None:
    model = scripted(
        call("remember", {"fact": "My cat is called Pixel"}),
        "Pixel, noted.",
        call("remember", {"fact": "Works as a nurse in Lyon"}, id="c2"),
        "Noted.",
        "I don't know your cat's name.",
    )
    h = await make_harness(model)
    await h.say("remember my cat is called Pixel")
    await h.say("remember I work as a nurse in Lyon")
    [listing] = await h.say("/memory")
    assert "Memory is on in this chat." in listing and "(2, newest first)" in listing
    assert listing.index("#2 Works as a nurse in Lyon") < listing.index("#1 My cat is called Pixel")

    [forgot] = await h.say("/memory forget 1")
    assert forgot.startswith("Forgotten: #1 is deleted, from search too. I also removed it from")
    assert await h.say("/memory forget 1") == ["You have no memory #1."]
    store = h.gateway.store
    assert await store.read("SELECT rowid FROM memory_index WHERE memory_index MATCH 'pixel'") == []
    assert await h.say("what is my cat called?") == ["I don't know your cat's name."]
    assert "Pixel" not in (model.requests[-1].system or "")

    [forgot] = await h.say("/memory forget all")
    assert forgot.startswith("Forgotten: 1 memories deleted, from search too.")
    assert "I remember nothing about you yet." in (await h.say("/memory"))[0]
    assert await store.read("SELECT count(*) FROM memories") == [(0,)]
    assert await store.read("SELECT count(*) FROM memory_index") == [(0,)]


async def test_people_never_see_each_others_memories(make_harness: Any, scripted: Any) -> None:
    model = scripted(call("remember", {"fact": "Birthday is on 3 March"}), "Noted.", "No idea.")
    h = await make_harness(model, admins=["admin"])
    await h.say("remember my birthday is 3 March", user="alice")
    assert await h.say("when is my birthday?", user="admin") == ["No idea."]
    assert "3 March" not in (model.requests[-1].system or "")
    listing = (await h.say("/memory", user="admin"))[0]
    assert "nothing about you" in listing and "March" not in listing
    assert "Usage" in (await h.say("/memory show alice", user="admin"))[0], "no way to read another's"


async def test_groups_are_private_unless_an_admin_turns_memory_on(make_harness: Any, scripted: Any) -> None:
    model = scripted("Hi group.", call("remember", {"fact": "Team lunch is on Fridays"}), "Noted for the group.")
    h = await make_harness(model, admins=["admin"])
    group = h.chat("g1")
    await h.say("hello all", chat=group, is_direct=False, mentions_bot=True)
    assert not {"remember", "recall", "forget"} & tool_names(model.requests[0]), "off in groups by default"
    listing = (await h.say("/memory", chat=group, is_direct=False, mentions_bot=True))[0]
    assert "off in this chat" in listing and "private" in listing
    assert "Only admins" in (await h.say("/memory on", chat=group, is_direct=False, mentions_bot=True))[0]
    assert await h.say("/memory on", chat=group, is_direct=False, mentions_bot=True, user="admin") == [
        "Memory is on in this chat."
    ]
    await h.say("remember team lunch is on Fridays", chat=group, is_direct=False, mentions_bot=True)
    assert "remember" in tool_names(model.requests[1])
    audit = await h.gateway.runs.audit_log()
    assert audit[0]["name"] == "memory" and audit[0]["new"] is True and audit[0]["actor"] == "admin"


async def test_the_token_budget_is_respected(make_harness: Any, scripted: Any) -> None:
    model = scripted("Sure.", "Sure.")
    h = await make_harness(model, memory={"budget_tokens": 120})
    service = h.gateway.memory
    for i in range(60):
        await service.remember_text("console:c1", "u1", f"Fact number {i}: likes colour {i} and place {i * 7}")
    await service.remember_text("console:c1", "u1", "Owns a bicycle called Rocket")
    await h.say("tell me about my bicycle")
    block = memory_block(model.requests[0])
    assert "Rocket" in block, "the matching memory first"
    assert estimate_tokens(block) <= 120 < estimate_tokens(block) + 40, block
    await h.gateway.tracing.flush()
    [events] = await h.gateway.tracing.runs("console:c1")
    memory = next(e for e in events if e.type == "memory")
    assert memory.data["tokens"] <= 120 and memory.data["budget"] == 120
    assert "Rocket" not in str(memory.data), "the trace holds ids, not what is remembered"

    h.gateway.settings.memory.budget_tokens = 0
    await h.say("and my bicycle again?")
    assert memory_block(model.requests[1]) == ""


async def test_secrets_are_never_remembered(make_harness: Any, scripted: Any) -> None:
    model = scripted(call("remember", {"fact": "Wifi password is hunter2hunter2"}), "I won't store passwords.")
    h = await make_harness(model)
    await h.say("remember my wifi password is hunter2hunter2")
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and "secrets are never stored" in (result.content or "")
    assert await h.gateway.store.read("SELECT count(*) FROM memories") == [(0,)]


async def test_session_keys_are_kept_per_chat_and_shown_in_trace(
    make_harness: Any, scripted: Any, tmp_path: Path
) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "tracker.md").write_text(
        "---\nname: tracker\nrunner: react\ndescription: keeps track of a task\n"
        "memory: {session: [current_task, blockers]}\n---\nYou track the user's task.\n"
    )
    model = scripted(
        call("update_session", {"key": "current_task", "value": "migrate the billing database"}),
        "Tracking it.",
        "Still on the billing migration.",
        "Nothing here.",
    )
    h = await make_harness(model, agents={"dirs": [str(agents)]})
    await h.say("@tracker I'm migrating the billing database")
    assert "update_session" in tool_names(model.requests[0])
    declared = next(t for t in model.requests[0].tools if t.name == "update_session")
    assert declared.parameters["properties"]["key"]["enum"] == ["current_task", "blockers"]
    await h.say("@tracker where was I?")
    assert "- current_task: migrate the billing database" in (model.requests[2].system or "")
    assert "- blockers: (not set)" in (model.requests[2].system or "")
    shown = (await h.say("/trace"))[0]
    assert "📝 tracker: session: current_task=migrate the billing database; blockers=(not set)" in shown

    await h.say("@tracker anything?", chat=h.chat("c2"))
    assert "- current_task: (not set)" in (model.requests[3].system or ""), "per chat"
    await h.say("/reset")
    assert await h.gateway.memory.memories.session("console:c1", "tracker") == {}


async def test_the_offline_model_remembers_and_recalls(make_harness: Any) -> None:
    from agents.models.offline import OfflineModel

    h = await make_harness(OfflineModel(), routing={"strategy": "rule", "rule": {"learned": True}})
    [said] = await h.say("remember that I like green tea")
    assert "remembered as #1" in said
    [said] = await h.say("what do you remember about me?")
    assert "#1 I like green tea" in said


async def test_configured_secrets_are_redacted_from_memories(make_harness: Any, scripted: Any) -> None:
    secret = "zzTopSecretValue99"
    model = scripted(call("remember", {"fact": f"The office door code note says {secret} twice"}), "Noted.")
    h = await make_harness(model, model={"providers": {"gemini": {"api_key": secret}}})
    await h.say("remember what the office note says")
    rows = await h.gateway.store.read("SELECT text FROM memories")
    assert rows == [("The office door code note says ‹redacted: secret› twice",)]
    assert await h.gateway.store.read(f"SELECT rowid FROM memory_index WHERE memory_index MATCH '{secret}'") == []


async def test_agent_files_choose_what_memory_they_get(make_harness: Any, scripted: Any, tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "clock.md").write_text(
        "---\nname: clock\nrunner: react\ntools: {allow: [get_current_time]}\n---\nYou tell the time.\n"
    )
    (agents / "stranger.md").write_text("---\nname: stranger\nrunner: chat\nmemory: {long_term: false}\n---\nHi.\n")
    model = scripted("It is noon.", "Hello.")
    h = await make_harness(model, agents={"dirs": [str(agents)]})
    await h.gateway.memory.remember_text("console:c1", "u1", "Lives in Oslo")
    await h.say("@clock what time is it here?")
    assert "#1 Lives in Oslo" in (model.requests[0].system or ""), "recalled for an agent without the tools"
    assert "`recall`" not in (model.requests[0].system or "") and "recall" not in tool_names(model.requests[0])
    await h.say("@stranger hi")
    assert "Oslo" not in (model.requests[1].system or "") and not tool_names(model.requests[1])
