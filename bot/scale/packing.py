"""Redis commands packed by hiredis's C packer.

redis-py's asyncio connections pack every command in Python (its sync ones use hiredis when present), several
times slower, and a gateway and a worker pack several commands per message (see bench/README.md, "Redis").  The
packer is redis-py's own for its sync connections, so the bytes are the same; whatever hiredis does not take (a
``bool``, ``None``) goes through the asyncio connection's packer, so its errors stay what they were.
"""

from __future__ import annotations

from typing import Any

_MADE: dict[type[Any], type[Any]] = {}


def packing(connection_class: type[Any]) -> type[Any]:
    """``connection_class`` (a redis-py asyncio connection class) packing its commands with hiredis; unchanged
    without hiredis."""
    made = _MADE.get(connection_class)
    if made is None:
        made = _MADE[connection_class] = _packing(connection_class)
    return made


def _packing(connection_class: type[Any]) -> type[Any]:
    from redis.connection import HiredisRespSerializer
    from redis.exceptions import DataError
    from redis.utils import HIREDIS_AVAILABLE

    if not HIREDIS_AVAILABLE:
        return connection_class
    pack = HiredisRespSerializer().pack
    own = connection_class.pack_command

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        try:
            return pack(*args)
        except DataError:
            return own(self, *args)

    return type(f"Hiredis{connection_class.__name__}", (connection_class,), {"pack_command": pack_command})
