"""One suite over both memory repositories: the SQL one (SQLite FTS5 and PostgreSQL ``tsvector``) and the fake unit
tests use (``tests/fakes/memory_repos.py``), so the fake finds what the store finds for these queries, CJK included,
and links accounts and uses codes as it does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.memory.text import query_terms
from bot.store.ports import MemoryRepo
from bot.store.sql.repos.memory import SqlMemoryStore
from bot.store.sql.store import SqlStore
from bot.store.values import MemoryFull
from tests.fakes.memory_repos import FakeMemory

FACTS = [
    ("telegram:1", "My cat is called Pixel"),
    ("telegram:1", "Is vegetarian and allergic to peanuts"),
    ("telegram:1", "我下周去东京出差"),
    ("telegram:1", "会議は金曜日の午後です"),
    ("telegram:1", "Works as a nurse in Lyon"),
    ("slack:U2", "My cat is called Tiger"),
]


@pytest.fixture
async def memories(url_or_fake: str | None, open_store: Callable[..., Awaitable[SqlStore]]) -> MemoryRepo:
    if url_or_fake is None:
        return FakeMemory()
    return SqlMemoryStore(await open_store(url_or_fake))


async def _filled(memories: MemoryRepo) -> MemoryRepo:
    for person, text in FACTS:
        await memories.add(person, text, person, 100)
    return memories


async def _search(memories: MemoryRepo, person: str, text: str) -> list[str]:
    return [hit.text for hit in await memories.search(person, query_terms(text), 5)]


async def test_search_finds_words_stems_and_only_the_persons_own(memories: MemoryRepo) -> None:
    await _filled(memories)
    assert await _search(memories, "telegram:1", "what is my cat's name?") == ["My cat is called Pixel"]
    assert await _search(memories, "telegram:1", "do I have cats") == ["My cat is called Pixel"], "stemmed"
    assert await _search(memories, "slack:U2", "cat") == ["My cat is called Tiger"], "never another person's"
    assert await _search(memories, "telegram:1", "where do I work?") == ["Works as a nurse in Lyon"]
    assert await _search(memories, "telegram:1", "peanut allergy") == ["Is vegetarian and allergic to peanuts"]
    assert await _search(memories, "telegram:1", "quantum chromodynamics") == []
    assert await memories.search("telegram:1", [], 5) == []


@pytest.mark.parametrize(
    ("query", "found"),
    [("东京", "我下周去东京出差"), ("我什么时候出差？", "我下周去东京出差"), ("会議", "会議は金曜日の午後です")],
)
async def test_cjk_is_found_by_character_pairs(memories: MemoryRepo, query: str, found: str) -> None:
    await _filled(memories)
    assert await _search(memories, "telegram:1", query) == [found]


async def test_the_same_fact_is_kept_once_and_the_limit_holds(memories: MemoryRepo) -> None:
    first = await memories.add("p", "Likes green tea", "c", 2)
    assert first[1] and await memories.add("p", "Likes green tea", "c", 2) == (first[0], False)
    await memories.add("p", "Lives in Oslo", "c", 2)
    with pytest.raises(MemoryFull):
        await memories.add("p", "Has two kids", "c", 2)
    assert await memories.count("p") == 2
    assert [h.text for h in await memories.newest("p", 5)] == ["Lives in Oslo", "Likes green tea"]
    assert [h.text for h in await memories.newest("p", 5, offset=1)] == ["Likes green tea"]
    assert [h.source for h in await memories.get("p", [first[0]])] == ["c"]
    assert await memories.get("other", [first[0]]) == [], "only the person's own"


async def test_deleting_leaves_search_and_vectors(memories: MemoryRepo) -> None:
    await _filled(memories)
    [pixel] = await memories.search("telegram:1", ["pixel"], 5)
    await memories.put_vector(pixel.id, "telegram:1", "embed-1", [0.5, -1.0, 0.25])
    assert await memories.vectors("telegram:1", "embed-1") == [(pixel.id, (0.5, -1.0, 0.25))]
    assert await memories.vectors("telegram:1", "embed-2") == []
    assert await memories.delete("slack:U2", [pixel.id]) == 0, "only its owner deletes it"
    assert await memories.delete("telegram:1", []) == 0
    assert await memories.delete("telegram:1", [pixel.id]) == 1
    assert await memories.search("telegram:1", ["pixel"], 5) == []
    assert await memories.vectors("telegram:1", "embed-1") == []
    await memories.put_vector(pixel.id, "telegram:1", "embed-1", [1.0])
    assert await memories.vectors("telegram:1", "embed-1") == [], "no vector without its memory"
    assert await memories.delete("telegram:1", None) == 4
    assert await memories.count("telegram:1") == 0 and await memories.count("slack:U2") == 1


async def test_linking_merges_people_and_a_code_works_once(memories: MemoryRepo) -> None:
    await _filled(memories)
    assert await memories.code_owner("NOPE0000") is None
    code = await memories.issue_code("telegram:1", 10)
    assert await memories.code_owner(code) == "telegram:1" and await memories.code_owner(code.lower()) == "telegram:1"
    newer = await memories.issue_code("telegram:1", 10)
    assert await memories.code_owner(code) is None and await memories.code_owner(newer) == "telegram:1", "replaced"
    person = await memories.link("telegram:1", "slack:U2", "slack:U2", code=newer)
    assert person is not None and person.startswith("person:")
    assert await memories.person("telegram:1") == await memories.person("slack:U2") == person
    assert await memories.identities(person) == ["slack:U2", "telegram:1"]
    assert sorted(await _search(memories, person, "cat")) == ["My cat is called Pixel", "My cat is called Tiger"]
    assert await memories.link("telegram:1", "discord:9", "discord:9", code=newer) is None, "used up"
    assert await memories.person("discord:9") == "discord:9"
    assert await memories.link("discord:9", "telegram:1", "admin") == person, "the linked person is kept"
    assert await memories.identities(person) == ["discord:9", "slack:U2", "telegram:1"]
    assert await memories.unlink("slack:U2") and not await memories.unlink("slack:U2")
    assert await memories.person("slack:U2") == "slack:U2" and await memories.count("slack:U2") == 0
    assert await memories.count(person) == 6, "the memories stay with the person"


async def test_recall_finds_the_linked_person_matches_then_newest(memories: MemoryRepo) -> None:
    await _filled(memories)
    person, hits = await memories.recall("telegram:1", query_terms("what is my cat called?"), 3)
    assert person == "telegram:1"
    assert [h.text for h in hits] == [
        "My cat is called Pixel",
        "Works as a nurse in Lyon",
        "会議は金曜日の午後です",
        "我下周去东京出差",
    ], "the match, then the newest three"
    assert memories.known_empty("telegram:1") is None
    await memories.link("telegram:1", "discord:7", "admin")
    person, hits = await memories.recall("discord:7", query_terms("东京"), 1)
    assert person.startswith("person:") and [h.text for h in hits] == ["我下周去东京出差", "Works as a nurse in Lyon"]
    assert await memories.recall("nobody:1", query_terms("cat"), 5) == ("nobody:1", [])
    assert await memories.recall("nobody:1", [], 5) == ("nobody:1", [])
    assert memories.known_empty("nobody:1") == "nobody:1", "known to have none once recalled"
    await memories.add("nobody:1", "Likes tea", "c", 10)
    assert memories.known_empty("nobody:1") is None, "a write forgets it"


async def test_summaries_and_session_keys(memories: MemoryRepo) -> None:
    assert await memories.summary("console:c1") == ("", 0)
    await memories.set_summary("console:c1", "- My name is Ada", 12)
    await memories.set_summary("console:c1", "- My name is Ada\n- Likes tea", 30)
    assert await memories.summary("console:c1") == ("- My name is Ada\n- Likes tea", 30)
    await memories.set_session("console:c1", "debugger", "task", "fix the login bug", "r1")
    await memories.set_session("console:c1", "debugger", "branch", "main", "r1")
    await memories.set_session("console:c1", "writer", "task", "other", "r1")
    assert await memories.session("console:c1", "debugger") == {"branch": "main", "task": "fix the login bug"}
    await memories.set_session("console:c1", "debugger", "task", "", "r2")
    assert await memories.session("console:c1", "debugger") == {"branch": "main"}
    await memories.forget_chat("console:c1")
    assert await memories.summary("console:c1") == ("", 0)
    assert await memories.session("console:c1", "writer") == {}
