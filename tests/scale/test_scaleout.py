"""A scaled-out bot: one gateway and workers as processes on real PostgreSQL and Redis.

The burst test sends ``SCALE_MESSAGES`` (default 3,000) messages over ``SCALE_CHATS`` (300) chats through
the Telegram webhook of one gateway to three workers and SIGKILLs a worker mid-burst (``SCALE_KILL=0``: no
kill); ``SCALE_MESSAGES=10000 SCALE_CHATS=1000`` is the long run.  Nothing waits for a fixed time: waits end
when the expected thing happened, and fail only when progress stops for a long while (a busy machine is slow,
not stuck).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from tests.fakes.servers import PostgresServer, RedisServer
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers.net import free_port
from tests.scale.harness import Cluster
from tests.waiting import CEILING_S, eventually, progressing

pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("cluster")]


@pytest.fixture
async def fake() -> FakeTelegram:
    server = FakeTelegram()
    await server.start()
    yield server  # type: ignore[misc]
    await server.stop()


@pytest.fixture
async def cluster(tmp_path: Path, fake: FakeTelegram, postgres: PostgresServer, redis: RedisServer) -> Cluster:
    redis.flush()
    group = Cluster(tmp_path, fake, postgres.url(postgres.create_database()), redis.url())
    yield group  # type: ignore[misc]
    await group.stop_all()


def prompt_of(fake: FakeTelegram, chat_id: int) -> tuple[str, str] | None:
    """The message reference and Approve payload of the chat's confirmation prompt, once it was sent."""
    for (chat, message_id), message in fake.messages.items():
        keyboard = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        for row in keyboard:
            for button in row:
                if chat == chat_id and "Approve" in button["text"]:
                    return f"{chat}:{message_id}", button["callback_data"]
    return None


async def test_a_prompt_raised_by_a_killed_worker_is_resumed_by_another(
    cluster: Cluster, fake: FakeTelegram, tmp_path: Path
) -> None:
    """A message goes through gateway and worker; a confirmation the worker raised is pressed while no worker
    runs, and resumed by the next one."""
    await cluster.start("gateway", "gateway")
    await cluster.start("worker-1", "worker")
    await cluster.deliver({"update_id": 1, **fake.message("hello there", chat_id=7, user_id=7)})
    await fake.wait_for(lambda: "echo: hello there" in fake.sent_texts(7), CEILING_S)
    await cluster.deliver({"update_id": 10, **fake.message("@react confirm wipe", chat_id=8, user_id=8)})
    prompt = await fake.wait_for(lambda: prompt_of(fake, 8), CEILING_S)
    await cluster.kill("worker-1")
    # Pressed while no worker runs: stored, and waiting in the chat's partition.
    await cluster.deliver({"update_id": 11, **fake.press(prompt[0], prompt[1], user_id=8)})
    await cluster.start("worker-2", "worker")
    await fake.wait_for(lambda: any(t.startswith("done: deleted") for t in fake.sent_texts(8)), CEILING_S)
    runs = (tmp_path / "count.txt").read_text().splitlines()
    assert len(runs) == 1 and runs[0].endswith("@react confirm wipe") or "confirm wipe" in runs[0], runs
    assert str(cluster.procs["worker-2"].pid) == runs[0].split()[0], "the surviving worker ran the tool"
    edited = fake.messages[(8, int(prompt[0].split(":")[1]))]
    assert "Approved" in edited["text"] and not (edited.get("reply_markup") or {}).get("inline_keyboard")


MESSAGES = int(os.environ.get("SCALE_MESSAGES", "3000"))
CHATS = int(os.environ.get("SCALE_CHATS", "300"))


async def test_a_burst_survives_a_killed_worker(cluster: Cluster, fake: FakeTelegram, postgres: PostgresServer) -> None:
    """Every message is stored once, answered once, in order per chat, though a worker is SIGKILLed mid-burst."""
    per_chat = MESSAGES // CHATS
    await cluster.start("gateway", "gateway")
    await asyncio.gather(*(cluster.start(f"worker-{n}", "worker") for n in (1, 2, 3)))
    chats = [10_000 + c for c in range(CHATS)]
    updates = {
        chat: [
            {"update_id": chat * 100 + n, **fake.message(f"c{chat}-m{n}", chat_id=chat, user_id=chat)}
            for n in range(per_chat)
        ]
        for chat in chats
    }

    def answers() -> int:
        return sum(1 for (chat, _), m in fake.messages.items() if chat >= 10_000 and m["text"].startswith("echo: "))

    lanes = asyncio.Semaphore(100)

    async def lane(chat: int) -> None:
        async with lanes:
            for update in updates[chat]:
                await cluster.deliver(update)

    began = time.monotonic()
    burst = asyncio.gather(*(lane(chat) for chat in chats))
    await progressing(answers, MESSAGES // 4, what="answers before the kill")
    killed_at = answers()
    if os.environ.get("SCALE_KILL", "1") == "1":
        await cluster.kill("worker-1")
    await burst
    await progressing(answers, MESSAGES, what="answers")
    elapsed = time.monotonic() - began
    await eventually(lambda: quiet(cluster.env["PG_URL"]), what="every event handled and every reply marked sent")
    print({"messages": MESSAGES, "chats": CHATS, "killed_after_answers": killed_at, "seconds": round(elapsed, 1)})

    bad = []
    for chat in chats:
        texts = [
            m["text"]
            for (c, _), m in sorted(fake.messages.items())
            if c == chat and m.get("text", "").startswith("echo: ")
        ]
        if texts != [f"echo: c{chat}-m{n}" for n in range(per_chat)]:
            bad.append((chat, texts))
    assert not bad, f"{len(bad)} chats not answered once each, in order: {bad[:3]}"
    again = [m["text"] for m in fake.messages.values() if "send it again" in m.get("text", "")]
    assert not again, "a request cut off before any tool ran is run again, not handed back to the person"
    db = await asyncpg.connect(cluster.env["PG_URL"])
    try:
        rows = await db.fetch("SELECT event_key, status FROM inbox")
    finally:
        await db.close()
    keys = Counter(r["event_key"] for r in rows)
    assert len(keys) == MESSAGES and max(keys.values()) == 1, "every message stored once"
    assert {r["status"] for r in rows} == {"done"}, "and handled"


async def quiet(pg_url: str) -> bool:
    """Nothing left to do anywhere: every stored event handled, no run under way, every reply marked sent (a reply
    sent twice would have been sent by now)."""
    db = await asyncpg.connect(pg_url)
    try:
        busy = await db.fetchval(
            "SELECT (SELECT count(*) FROM inbox WHERE status = 'pending') + (SELECT count(*) FROM runs WHERE status = "
            "'running') + (SELECT count(*) FROM outbox WHERE status = 'pending')"
        )
    finally:
        await db.close()
    return busy == 0


async def test_one_gateway_polls_telegram_and_another_takes_over_when_it_dies(
    cluster: Cluster, fake: FakeTelegram
) -> None:
    """getUpdates serves one poller per bot: gateways elect it by lease; the survivor polls after a SIGKILL."""
    ports = {"gateway-a": cluster.port, "gateway-b": free_port()}
    polling = {"TELEGRAM_MODE": "polling"}
    await cluster.start("gateway-a", "gateway", **polling, HTTP_PORT=str(ports["gateway-a"]))
    await cluster.start("gateway-b", "gateway", **polling, HTTP_PORT=str(ports["gateway-b"]))
    await cluster.start("worker", "worker")
    states = {name: (await cluster.health(port))["channels"]["telegram"] for name, port in ports.items()}
    assert sorted(states.values()) == ["standby (another gateway process receives)", "up"], states
    fake.push(fake.message("before", chat_id=21, user_id=21))
    await fake.wait_for(lambda: "echo: before" in fake.sent_texts(21), CEILING_S)
    poller = next(name for name, state in states.items() if state == "up")
    standby = next(name for name in ports if name != poller)
    # Killed when idle: a gateway killed between sending a reply and marking it sent is another test's subject.
    await eventually(lambda: quiet(cluster.env["PG_URL"]), what="the reply to be marked sent")
    await cluster.kill(poller)
    fake.push(fake.message("after", chat_id=21, user_id=21))
    await fake.wait_for(lambda: "echo: after" in fake.sent_texts(21), CEILING_S)
    assert (await cluster.health(ports[standby]))["channels"]["telegram"] == "up"
    assert fake.sent_texts(21).count("echo: before") == 1 and fake.sent_texts(21).count("echo: after") == 1


async def test_role_all_on_the_bus_works_beside_a_worker(cluster: Cluster, fake: FakeTelegram) -> None:
    """``--role all`` with ``bus.url``: a gateway that also handles partitions, and a worker sharing them."""
    await cluster.start("all", "all")
    await cluster.start("worker", "worker")
    chats = range(30, 46)
    for chat in chats:
        await cluster.deliver({"update_id": chat * 10, **fake.message(f"hi {chat}", chat_id=chat, user_id=chat)})
    for chat in chats:
        await fake.wait_for(lambda chat=chat: f"echo: hi {chat}" in fake.sent_texts(chat), CEILING_S)
    health = await cluster.health(cluster.port)
    assert health["role"] == "all" and 0 < health["partitions"] <= 16
