"""Child process of the crash test: writes forever, printing every acknowledged write.

``python _crash_writer.py DB_PATH`` — 20 chats each accept a message, then append
a reply, in a loop; a line is printed only after the store acknowledged the write.
"""

from __future__ import annotations

import asyncio
import sys

from agents.messages import Message
from bot.store.sql.store import SqlStore


async def main(path: str) -> None:
    store = SqlStore(f"sqlite:///{path}", history_limit=100_000, retention_interval_s=3600)
    await store.start()
    print("ready", flush=True)

    async def chat(c: int) -> None:
        i = 0
        while True:
            key = f"e-{c}-{i}"
            assert await store.accept(key, f"chat:{c}", Message.user(key))
            print(f"event {key}", flush=True)
            await store.append(f"chat:{c}", [Message.assistant(f"r-{c}-{i}")])
            print(f"reply chat:{c} r-{c}-{i}", flush=True)
            i += 1

    await asyncio.gather(*(chat(c) for c in range(20)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
