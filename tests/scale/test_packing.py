"""Commands packed by hiredis (bot/scale/packing.py) are the bytes redis-py packs, and what hiredis refuses fails as
redis-py fails it."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.connection import Connection, SSLConnection
from redis.exceptions import DataError

from bot.gateway.scaled import connect_redis
from bot.scale.packing import packing

COMMANDS = [
    ("XADD", "bot:in:3", "MAXLEN", "~", 100_000, "*", "event", '{"text": "héllo ☃"}', "chat", "telegram:1"),
    ("ZADD", "bot:workers", 1.5, "w", 1e20, "v", -3.5e-7, "u"),
    (b"XACK", b"bot:in:3", b"workers", memoryview(b"1-0")),
    ("XINFO GROUPS", "bot:in:3"),  # two words: redis-py splits them
    ("EVAL", "return 1", 1, "bot:queued", ""),
]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_same_bytes_as_redis_py(command: tuple[Any, ...]) -> None:
    packed = b"".join(packing(Connection)().pack_command(*command))
    assert packed == b"".join(bytes(chunk) for chunk in Connection().pack_command(*command))


@pytest.mark.parametrize("value", [True, None, object()])
def test_what_hiredis_refuses_fails_as_redis_py_fails_it(value: object) -> None:
    with pytest.raises(DataError):
        packing(Connection)().pack_command("SET", "k", value)


def test_the_client_keeps_its_urls_kind_of_connection() -> None:
    assert issubclass(connect_redis("redis://127.0.0.1:1").connection_pool.connection_class, Connection)
    assert issubclass(connect_redis("rediss://127.0.0.1:1").connection_pool.connection_class, SSLConnection)
    assert packing(Connection) is packing(Connection)
