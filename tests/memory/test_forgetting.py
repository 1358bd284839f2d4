"""Forgetting forgets: after ``/memory forget all`` the fact is in no row of the real store (trace events, history,
tool ledger, a paused run's checkpoint and its interrupt, the running summary, the full-text index), nowhere in the
SQLite database file (free pages and WAL included), and not in ``bot agents replay``, ``bot trace`` or the web
console; unlinking takes what the other accounts remembered out of the unlinked account's rows. Over SQLite and
PostgreSQL."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.models.scripted import call
from agents.tools.base import tool
from bot.memory.forgetting import FORGOTTEN, fact_pattern
from bot.memory.summary import without_facts
from tests.fakes.servers import PostgresServer
from tests.web.harness import WEB_TOKEN, Browserless

FACT = "My favourite tea is genmaicha"
WORD = "genmaicha"
ROOT = Path(__file__).resolve().parents[2]
PAD = " and it was a lovely sunny day" * 6


@tool(risk="medium", confirm=True)
async def add_to_list(item: str) -> str:
    """Add an item to the shopping list."""
    return f"added {item}"


async def rows_mentioning(store: Any, word: str) -> dict[str, int]:
    """Rows of every table whose text mentions ``word`` (any case), by table."""
    if store.dialect == "sqlite":
        tables = [r[0] for r in await store.read("SELECT name FROM sqlite_master WHERE type = 'table'")]
    else:
        tables = [
            r[0]
            for r in await store.read(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        ]
    found = {}
    for table in tables:
        rows = await store.read(f'SELECT * FROM "{table}"')
        hits = sum(1 for row in rows if word in repr(row).lower())
        if hits:
            found[table] = hits
    return found


def cli(settings: Any, tmp_path: Path, *args: str) -> str:
    """``bot …`` in a process of its own, on the same database."""
    config = tmp_path / "cli.yaml"
    config.write_text(f"store:\n  url: {settings.store.database_url()}\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "bot", *args, "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.url(server.create_database())


async def test_forget_all_leaves_the_fact_nowhere(
    make_harness: Any, scripted: Any, store_url: str | None, tmp_path: Path
) -> None:
    model = scripted(
        call("remember", {"fact": FACT}, id="r1"),
        "Noted: your favourite tea is genmaicha.",  # said back without its "my": found too
        call("recall", {"query": "tea drink"}, id="r2"),
        "Something Japanese, green and toasted.",
        "Lovely.",
        call("add_to_list", {"item": FACT}, id="a1"),
    )
    store = {"context_chars": 400, **({"url": store_url} if store_url else {})}
    h = await make_harness(
        model,
        tools=[add_to_list],
        store=store,
        memory={"summary": {"model": "extractive"}},
        http={"enabled": True, "port": 0},
        web={"enabled": True, "token": WEB_TOKEN},
    )
    await h.say(f"I live in Lyon. Remember that {FACT.lower()}, please")
    await h.say("what do I like to drink?")
    await h.say("I walked to the park today" + PAD)  # the window overflows: the first turns are summarised
    prompt = await h.say("@react put my favourite tea on the shopping list", chat=h.chat("c2"))
    assert any(WORD in p for p in prompt), "paused: the prompt shows the call"
    gateway = h.gateway
    await gateway.tracing.flush()
    summary = await gateway.store.read("SELECT summary FROM chat_summaries WHERE chat_key = 'console:c1'")
    assert summary and WORD in summary[0][0].lower(), "the running summary states the fact"
    before = await rows_mentioning(gateway.store, WORD)
    assert {"trace_events", "session_messages", "tool_ledger", "runs", "interrupts", "chat_summaries"} <= set(before)

    [reply] = await h.say("/memory forget all")
    assert reply.startswith("Forgotten: 1 memories deleted, from search too. I also removed them from ")
    assert await rows_mentioning(gateway.store, WORD) == {}, "no row of any table (index included)"
    rebuilt = await gateway.store.read("SELECT summary FROM chat_summaries WHERE chat_key = 'console:c1'")
    assert rebuilt == [("- I live in Lyon.",)], "the summary is rebuilt without the fact's line"
    stored = await gateway.store.read("SELECT data FROM trace_events WHERE data LIKE '%remember%'")
    assert any(FORGOTTEN in row[0] for row in stored), "the remember call's trace keeps its shape"

    # What people read: the shell's trace and replay, and the web console.
    shell = cli(gateway.settings, tmp_path, "trace", "console:c1", "--last", "5")
    assert "remember" in shell and FORGOTTEN in shell and WORD not in shell.lower()
    correlation = next(e.correlation_id for e in (await gateway.tracing.runs("console:c1", 5))[0])
    replayed = cli(gateway.settings, tmp_path, "agents", "replay", correlation)
    assert "🔧" in replayed and FORGOTTEN in replayed and WORD not in replayed.lower()
    web = Browserless(gateway)
    try:
        assert await web.login("token", WEB_TOKEN) == 303
        for page in ("/web/", "/web/chats/console%3Ac1", "/web/chats/console%3Ac2"):
            status, text, _ = await web.get(page)
            assert status == 200 and WORD not in text.lower(), page
        run_ids = [r[0] for r in await gateway.store.read("SELECT id FROM runs WHERE chat_key = 'console:c1'")]
        for run_id in run_ids:
            status, text, _ = await web.get(f"/web/runs/{run_id}")
            assert status == 200 and WORD not in text.lower()
    finally:
        await web.close()

    if gateway.store.dialect == "sqlite":
        database = Path(gateway.settings.store.database_url().split(":///", 1)[1])
        wal = database.with_name(database.name + "-wal")
        for file in (database, wal):
            if file.exists():
                assert WORD.encode() not in file.read_bytes().lower(), f"{file.name}: free pages and WAL too"


async def test_forgetting_one_keeps_the_others_and_unlink_takes_back_what_it_got(
    make_harness: Any, scripted: Any
) -> None:
    model = scripted(
        call("remember", {"fact": FACT}, id="r1"),
        "Noted.",
        call("remember", {"fact": "Works night shifts on Tuesdays"}, id="r2"),
        "Noted.",
        call("recall", {"query": "tea and shifts"}, id="r3"),
        "You know what you like.",
    )
    h = await make_harness(model)
    await h.say("remember my favourite tea")
    await h.say("remember my shifts")
    [code_reply] = await h.say("/memory link")
    code = re.search(r"code: (\w+)", code_reply)
    assert code is not None
    other = h.chat("c9")
    assert "Linked with console account u1" in (await h.say(f"/memory link {code[1]}", chat=other, user="u9"))[0]
    await h.say("what do you know about me?", chat=other, user="u9")  # recalls both facts into u9's chat
    store = h.gateway.store
    await h.gateway.tracing.flush()
    assert (await rows_mentioning(store, "night shifts")).get("trace_events")

    [reply] = await h.say("/memory forget 1")
    assert reply.startswith("Forgotten: #1 is deleted, from search too. I also removed it from ")
    assert await rows_mentioning(store, WORD) == {}
    assert (await rows_mentioning(store, "night shifts")).get("session_messages"), "the other fact stays"

    [unlinked] = await h.say("/memory unlink", chat=other, user="u9")
    assert unlinked.startswith("Unlinked: this account starts with no memories") and "stored records" in unlinked
    mine = await store.read("SELECT data FROM session_messages WHERE chat_key = 'console:c1'")
    theirs = await store.read("SELECT data FROM session_messages WHERE chat_key = 'console:c9'")
    assert any("night shifts" in r[0].lower() for r in mine), "the account that told it keeps its history"
    assert not any("night shifts" in r[0].lower() for r in theirs), "the unlinked account no longer holds it"
    assert "nothing about you" in (await h.say("/memory", chat=other, user="u9"))[0]


def test_a_summary_is_rebuilt_without_the_lines_that_state_a_forgotten_fact() -> None:
    summary = "\n".join(
        [
            "- Favourite tea: genmaicha (toasted rice)",
            "- My favourite TEA  is genmaicha",
            "- Lives in Lyon and works as a nurse",
            "- Drinks coffee at work",
        ]
    )
    pattern = fact_pattern([FACT])
    assert pattern is not None
    assert without_facts(summary, [FACT], pattern).splitlines() == [
        "- Lives in Lyon and works as a nurse",
        "- Drinks coffee at work",
    ]
