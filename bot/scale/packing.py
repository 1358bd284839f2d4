"""Redis commands packed by hiredis's C packer.

redis-py's asyncio connections pack every command in Python (its sync ones use hiredis when present): about 10 µs
for a stream entry against 1 µs, and a gateway and a worker pack several commands per message.  The bytes are the
same; whatever hiredis does not take (a ``bool``, ``None``, a command name of two words) goes through redis-py's own
packer, so its errors stay redis-py's.
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
    try:
        import hiredis
    except ImportError:
        return connection_class
    pack = hiredis.pack_command
    own = connection_class.pack_command

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        name = args[0]
        if (b" " if isinstance(name, bytes) else " ") in name:
            return own(self, *args)  # "CONFIG GET": sent as two words, which redis-py splits
        try:
            return [pack(args)]
        except TypeError:
            return own(self, *args)

    return type(f"Hiredis{connection_class.__name__}", (connection_class,), {"pack_command": pack_command})
