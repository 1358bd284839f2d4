"""Settings shared by processes: cached per key, re-read when another process announces a change (Redis pub/sub),
and after a TTL at the latest (an announcement missed)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.clock import FakeClock
from bot.config.settings import load_settings
from bot.gateway.scaled import ScaleOut, connect_redis
from bot.store.sql.migrate import migrate_url
from bot.store.sql.store import SqlStore
from tests.fakes.servers import PostgresServer, RedisServer
from tests.waiting import eventually


class CountingStore(SqlStore):
    """The real store, counting the settings reads that reach the database."""

    loads = 0

    async def _load_settings(self, settings_key: str) -> dict[str, Any]:
        self.loads += 1
        return await super()._load_settings(settings_key)


async def test_a_change_in_one_process_is_seen_by_the_other_at_once_and_reads_are_cached(
    postgres: PostgresServer, redis: RedisServer, tmp_path: Any
) -> None:
    url = postgres.url(postgres.create_database())
    await migrate_url(url)
    clock = FakeClock()
    settings = load_settings(
        None, env={}, user_config=tmp_path / "none.yaml", overrides={"bus": {"url": redis.url()}, "store": {"url": url}}
    )
    stores = [CountingStore(url, shared=True, clock=clock) for _ in range(2)]
    outs = []
    for store in stores:
        await store.start()
        out = ScaleOut(
            SimpleNamespace(bus=settings.bus, store=store, clock=clock), "worker", connect_redis(redis.url())
        )  # type: ignore[arg-type]
        out._share_settings()
        outs.append(out)
    one, two = stores
    try:

        async def subscribed() -> bool:
            return bool((await outs[0].redis.pubsub_numsub("bot:settings"))[0][1] >= 2)

        await eventually(subscribed, what="both processes listening")
        assert (await two.settings_view("telegram:1")) == {}
        for _ in range(50):
            await two.settings_view("telegram:1")
        assert two.loads == 1, "read once, then cached"

        await one.set_chat_setting("telegram:1", "strategy", "llm")

        async def seen() -> bool:
            return (await two.settings_view("telegram:1")).get("strategy") == "llm"

        await eventually(seen, what="the change announced to the other process")
        assert (await one.settings_view("telegram:1")) == {"strategy": "llm"}, "its own copy was written through"

        # A change nobody announced (a process that could not reach Redis) is read after the TTL.
        one.settings.published = None
        await one.set_chat_setting("telegram:1", "strategy", "rule")
        assert (await two.settings_view("telegram:1")).get("strategy") == "llm", "cached until the TTL"
        await clock.advance(two.settings.ttl_s + 1)
        assert (await two.settings_view("telegram:1")).get("strategy") == "rule"
    finally:
        for out in outs:
            await out.close()
        for store in stores:
            await store.close()
