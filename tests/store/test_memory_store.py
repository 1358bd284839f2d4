"""The memory tables on SQLite (FTS5) and PostgreSQL (tsvector): search by words and by CJK pairs, per person,
deleted from search with the row, merged by linking, one-time codes, summaries and session keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot.clock import FakeClock
from bot.memory.text import query_terms
from bot.store.sql.repos.memory import SHARED_EMPTY_S, MemoryFull, SqlMemoryStore


async def _filled(make_store: Callable[..., Any]) -> SqlMemoryStore:
    memories = SqlMemoryStore(await make_store())
    for person, text in [
        ("telegram:1", "My cat is called Pixel"),
        ("telegram:1", "Is vegetarian and allergic to peanuts"),
        ("telegram:1", "我下周去东京出差"),
        ("telegram:1", "会議は金曜日の午後です"),
        ("telegram:1", "Works as a nurse in Lyon"),
        ("slack:U2", "My cat is called Tiger"),
    ]:
        await memories.add(person, text, person, 100)
    return memories


async def search(memories: SqlMemoryStore, person: str, text: str) -> list[str]:
    return [hit.text for hit in await memories.search(person, query_terms(text), 5)]


async def test_search_finds_words_stems_and_only_the_persons_own(make_store: Callable[..., Any]) -> None:
    memories = await _filled(make_store)
    assert await search(memories, "telegram:1", "what is my cat's name?") == ["My cat is called Pixel"]
    assert await search(memories, "telegram:1", "do I have cats") == ["My cat is called Pixel"], "stemmed"
    assert await search(memories, "slack:U2", "cat") == ["My cat is called Tiger"], "never another person's"
    assert await search(memories, "telegram:1", "where do I work?") == ["Works as a nurse in Lyon"]
    assert await search(memories, "telegram:1", "quantum chromodynamics") == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("东京", "我下周去东京出差"),  # two characters: trigram search would miss it
        ("我什么时候出差？", "我下周去东京出差"),
        ("会議", "会議は金曜日の午後です"),
        ("金曜日", "会議は金曜日の午後です"),
    ],
)
async def test_cjk_is_found_by_character_pairs(make_store: Callable[..., Any], query: str, found: str) -> None:
    memories = await _filled(make_store)
    assert (await search(memories, "telegram:1", query))[0] == found


async def test_a_forgotten_memory_leaves_search(make_store: Callable[..., Any]) -> None:
    memories = await _filled(make_store)
    [pixel] = await memories.search("telegram:1", ["pixel"], 5)
    assert await memories.delete("slack:U2", [pixel.id]) == 0, "only its owner deletes it"
    assert await memories.delete("telegram:1", [pixel.id]) == 1
    assert await memories.search("telegram:1", ["pixel"], 5) == []
    if memories.store.dialect == "sqlite":
        assert await memories.store.read("SELECT rowid FROM memory_index WHERE memory_index MATCH 'pixel'") == []
    assert await memories.delete("telegram:1", None) == 4
    assert await memories.count("telegram:1") == 0 and await memories.count("slack:U2") == 1
    if memories.store.dialect == "sqlite":
        assert await memories.store.read("SELECT count(*) FROM memory_index") == [(1,)]


async def test_the_same_fact_is_kept_once_and_the_limit_holds(make_store: Callable[..., Any]) -> None:
    memories = SqlMemoryStore(await make_store())
    first = await memories.add("p", "Likes green tea", "c", 2)
    assert await memories.add("p", "Likes green tea", "c", 2) == (first[0], False)
    await memories.add("p", "Lives in Oslo", "c", 2)
    with pytest.raises(MemoryFull):
        await memories.add("p", "Has two kids", "c", 2)


async def test_linking_merges_people_and_a_code_works_once(make_store: Callable[..., Any]) -> None:
    memories = await _filled(make_store)
    code = await memories.issue_code("telegram:1", 10)
    assert await memories.code_owner(code) == "telegram:1"
    person = await memories.link("telegram:1", "slack:U2", "slack:U2", code=code)
    assert person is not None and person.startswith("person:")
    assert await memories.person("telegram:1") == await memories.person("slack:U2") == person
    assert sorted(await search(memories, person, "cat")) == ["My cat is called Pixel", "My cat is called Tiger"]
    assert await memories.link("telegram:1", "discord:9", "discord:9", code=code) is None, "used up"
    assert await memories.person("discord:9") == "discord:9"
    assert await memories.unlink("slack:U2")
    assert await memories.person("slack:U2") == "slack:U2" and await memories.count("slack:U2") == 0
    assert await memories.count(person) == 6, "the memories stay with the person"


async def test_summaries_and_session_keys(make_store: Callable[..., Any]) -> None:
    memories = SqlMemoryStore(await make_store())
    assert await memories.summary("console:c1") == ("", 0)
    await memories.set_summary("console:c1", "- My name is Ada", 12)
    await memories.set_summary("console:c1", "- My name is Ada\n- Likes tea", 30)
    assert await memories.summary("console:c1") == ("- My name is Ada\n- Likes tea", 30)
    await memories.set_session("console:c1", "debugger", "current_task", "fix the login bug", "r1")
    assert await memories.session("console:c1", "debugger") == {"current_task": "fix the login bug"}
    await memories.set_session("console:c1", "debugger", "current_task", "", "r2")
    assert await memories.session("console:c1", "debugger") == {}
    await memories.forget_chat("console:c1")
    assert await memories.summary("console:c1") == ("", 0)


async def test_vectors_round_trip(make_store: Callable[..., Any]) -> None:
    memories = SqlMemoryStore(await make_store())
    memory_id, _ = await memories.add("p", "Likes green tea", "c", 10)
    await memories.put_vector(memory_id, "p", "embed-1", [0.5, -1.0, 0.25])
    assert await memories.vectors("p", "embed-1") == [(memory_id, (0.5, -1.0, 0.25))]
    await memories.delete("p", [memory_id])
    assert await memories.vectors("p", "embed-1") == []


async def test_recall_finds_the_linked_person_matches_then_newest(make_store: Callable[..., Any]) -> None:
    memories = await _filled(make_store)
    person, hits = await memories.recall("telegram:1", query_terms("what is my cat called?"), 3)
    assert person == "telegram:1"
    assert [h.text for h in hits] == [
        "My cat is called Pixel",
        "Works as a nurse in Lyon",
        "会議は金曜日の午後です",
        "我下周去东京出差",
    ], "the match, then the newest three"
    await memories.link("telegram:1", "discord:7", "admin")
    person, hits = await memories.recall("discord:7", query_terms("东京"), 1)
    assert person.startswith("person:") and [h.text for h in hits] == ["我下周去东京出差", "Works as a nurse in Lyon"]
    assert await memories.recall("nobody:1", query_terms("cat"), 5) == ("nobody:1", [])
    assert await memories.recall("nobody:1", [], 5) == ("nobody:1", [])


async def test_link_codes_draw_every_symbol_of_their_alphabet(make_store: Callable[..., Any]) -> None:
    """Link codes use all 32 symbols (40 bits in 8), not the 24 a modulo over the id alphabet reached."""
    from bot.ids import CODE_ALPHABET

    memories = SqlMemoryStore(await make_store())
    seen: set[str] = set()
    for i in range(60):  # 480 symbols: every one of 32 shows with near certainty (miss chance < 1e-12)
        seen |= set(await memories.issue_code(f"telegram:{i}", 10))
    assert seen == set(CODE_ALPHABET)


async def test_a_shared_stores_no_memories_is_believed_for_a_while_on_its_clock(
    make_store: Callable[..., Any],
) -> None:
    clock = FakeClock()
    memories = SqlMemoryStore(await make_store(shared=True, clock=clock))
    assert await memories.recall("nobody:1", [], 5) == ("nobody:1", [])
    await clock.advance(SHARED_EMPTY_S - 0.1)
    assert memories.known_empty("nobody:1") == "nobody:1", "another process may have written, but not long ago"
    await clock.advance(0.1)
    assert memories.known_empty("nobody:1") is None, "asked again after SHARED_EMPTY_S on the store's clock"
