"""Long-term memory: recall latency at 100,000 memories, and recall@5 on a small labelled set.

Latency: 100,000 memories are stored through the store's writer (the FTS index is kept by its triggers), spread
over 100 people (1,000 each, the default ``memory.max_items``) and, separately, all held by one person; then the
query that runs before every turn (:meth:`SqlMemoryStore.recall`: the account's person, its full-text matches and
its newest memories, one statement) is timed for ``--queries`` messages.

recall@5: one person holds the labelled facts below among 1,000 generated ones; for each question, is the fact it
asks about among the first five recalled (what the model is shown first)?  Questions that share no word with
their fact are in the set on purpose: full-text search cannot find those (embeddings can; not measured here,
there is no embedding model offline).  Prints ONE JSON line.

    python bench/memory.py [--queries 2000] [--url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from bot.memory.text import grams, query_terms
from bot.store.sql.ops import Step, utcnow
from bot.store.sql.repos.memory import SqlMemoryStore
from bot.store.sql.store import SqlStore

LABELLED: list[tuple[str, str, bool]] = [
    # (fact, question, shares a word with the fact)
    ("My cat is called Pixel", "what's my cat's name?", True),
    ("I am allergic to peanuts", "which allergies do I have?", False),
    ("I work as a nurse at the city hospital", "where do I work?", True),
    ("My daughter Mia was born on 4 June 2019", "when is Mia's birthday?", True),
    ("I prefer window seats on flights", "book me a seat on the flight to Rome", True),
    ("My wife's name is Sara", "what is my wife called?", True),
    ("I'm training for the Berlin marathon in September", "how is my marathon training going?", True),
    ("I drive a blue Volvo V60", "what car do I have?", False),
    ("I don't eat meat", "suggest a dinner recipe", False),
    ("My favourite band is Radiohead", "recommend some music like my favourite band", True),
    ("I live in Lyon, near the Part-Dieu station", "which city do I live in?", True),
    ("My manager is called Jonas", "draft an email to my manager", True),
    ("I'm learning Japanese, level N4", "practise Japanese with me", True),
    ("My laptop is a ThinkPad X1 from 2021", "my laptop is slow, what should I check?", True),
    ("I take the 7:40 train to work", "when does my train leave?", True),
    ("My son plays football on Saturdays", "what does my son do at weekends?", True),
    ("My dentist appointment is on 12 December", "when do I see the dentist?", True),
    ("I'm saving for a house deposit of 40,000 euros", "how much is my house deposit goal?", True),
    ("My sister lives in Toronto", "what time is it where my sister lives?", True),
    ("I'm lactose intolerant", "can I have a cappuccino?", False),
    ("Our wedding anniversary is 21 August", "when is our anniversary?", True),
    ("My GitHub username is ada-dev", "what's my github username?", True),
    ("I use Neovim for coding", "which editor do I use?", False),
    ("My blood type is O negative", "what is my blood type?", True),
    ("I'm afraid of flying", "plan a trip to Lisbon", False),
    ("我住在上海浦东", "我住在哪里？", True),
    ("我的猫叫咪咪", "我的猫叫什么名字？", True),
    ("我对海鲜过敏", "我对什么过敏？", True),
    ("我每周三晚上打羽毛球", "我什么时候打羽毛球？", True),
    ("我女儿在读三年级", "我女儿几年级？", True),
    ("東京の会社で働いています", "どこで働いていますか？", True),
    ("毎朝コーヒーを二杯飲みます", "コーヒーは何杯飲みますか？", True),
]

FIRST = ["Alex", "Sam", "Kim", "Lee", "Noor", "Ivan", "Mei", "Omar", "Lena", "Raj"]
THINGS = ["tea", "jazz", "chess", "tennis", "sushi", "hiking", "poetry", "cycling", "opera", "baking"]
CITIES = ["Oslo", "Madrid", "Seoul", "Lima", "Cairo", "Perth", "Quebec", "Riga", "Porto", "Kyoto"]
TEMPLATES = [
    "Likes {thing} on weekends number {n}",
    "Met {name} at the {thing} club in {city} ({n})",
    "Went to {city} in {n} for a {thing} event",
    "Colleague {name} recommends {thing} (note {n})",
    "喜欢在{city}喝{thing}，第{n}次",
]


def generated(rng: random.Random, n: int) -> str:
    template = rng.choice(TEMPLATES)
    return template.format(thing=rng.choice(THINGS), name=rng.choice(FIRST), city=rng.choice(CITIES), n=n)


async def fill(store: SqlStore, rows: list[tuple[str, str]]) -> float:
    """Insert ``(person, text)`` rows through the writer, 500 per statement; seconds taken."""
    began = time.perf_counter()
    now = utcnow()
    for i in range(0, len(rows), 500):
        chunk = rows[i : i + 500]
        values = ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
        params: list[object] = []
        for person, text in chunk:
            params += [person, text, grams(text), person, now]
        await store.write(
            [Step(f"INSERT INTO memories (person, text, grams, source, created_at) VALUES {values}", tuple(params))]
        )
    return time.perf_counter() - began


async def latency(memories: SqlMemoryStore, people: list[str], queries: int, rng: random.Random) -> dict[str, float]:
    questions = [q for _, q, _ in LABELLED] + [f"what about {rng.choice(THINGS)} in {rng.choice(CITIES)}?"] * 10
    samples = []
    for _ in range(queries):
        person, question = rng.choice(people), rng.choice(questions)
        began = time.perf_counter()
        await memories.recall(person, query_terms(question), 20)
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p99_ms": round(samples[int(len(samples) * 0.99) - 1], 3),
        "max_ms": round(samples[-1], 3),
    }


async def recall_at_5(memories: SqlMemoryStore, store: SqlStore, rng: random.Random) -> dict[str, object]:
    person = "bench:labelled"
    rows = [(person, generated(rng, n)) for n in range(1000)]
    await fill(store, rows[:500])
    await fill(store, [(person, fact) for fact, _, _ in LABELLED])
    await fill(store, rows[500:])  # the labelled facts are neither the oldest nor the newest
    hits = {"all": 0, "shared_word": 0, "no_shared_word": 0}
    missed = []
    for fact, question, shared in LABELLED:
        _, recalled = await memories.recall(person, query_terms(question), 20)
        top = [m.text for m in recalled[:5]]
        found = fact in top
        hits["all"] += found
        hits["shared_word" if shared else "no_shared_word"] += found
        if not found:
            missed.append(question)
    shared_n = sum(1 for *_, s in LABELLED if s)
    return {
        "questions": len(LABELLED),
        "recall_at_5": round(hits["all"] / len(LABELLED), 3),
        "recall_at_5_shared_word": round(hits["shared_word"] / shared_n, 3),
        "recall_at_5_no_shared_word": round(hits["no_shared_word"] / (len(LABELLED) - shared_n), 3),
        "missed": missed,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--url", default=None, help="a PostgreSQL URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    rng = random.Random(7)
    out: dict[str, object] = {"memories": args.memories}
    with tempfile.TemporaryDirectory() as tmp:
        for layout, people in (("100_people", 100), ("one_person", 1)):
            url = args.url or f"sqlite:///{tmp}/{layout}.db"
            store = SqlStore(url, synchronous="OFF")
            await store.start()
            try:
                if args.url:
                    await store.write([Step("DELETE FROM memories")])
                names = [f"bench:{p}" for p in range(people)]
                rows = [(names[i % people], generated(rng, i)) for i in range(args.memories)]
                loaded = await fill(store, rows)
                if args.url:  # what autovacuum does after a bulk load; the planner needs the statistics
                    await store.write([Step("ANALYZE memories")])
                memories = SqlMemoryStore(store)
                out[layout] = {"load_s": round(loaded, 1), **await latency(memories, names, args.queries, rng)}
                if layout == "100_people":
                    out["labelled"] = await recall_at_5(memories, store, rng)
            finally:
                await store.close()
    out["dialect"] = "postgresql" if args.url else "sqlite"
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
