"""Streamed answers: time from the model's first chunk to the first visible update, through the real gateway.

A model that streams each answer in 12 chunks 100 ms apart answers ``--chats`` chats at once (console-named
recording channel with ``streaming`` on, SQLite store).  For each answer: the time from its first chunk to
the first preview the channel received, the number of preview updates, and whether the final message held
exactly the whole answer.  Goal: first visible update < 300 ms p50.  Prints ONE JSON line.

    python bench/streaming.py [--chats 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from agents.messages import Message
from agents.models.base import Model, ModelResponse, ToolDeclaration
from bench.gateway import ReplyChannel, _message
from bot.config.settings import load_settings
from bot.events import OutboundMessage
from bot.gateway.app import Gateway

CHUNKS = [f"part {n} of the answer, " for n in range(12)]
GAP_S = 0.1


class StreamingModel(Model):
    name = "streaming"

    def __init__(self) -> None:
        self.first_chunk: dict[str, float] = {}

    async def request(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDeclaration] = (),
        system: str | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> ModelResponse:
        return ModelResponse(text="".join(CHUNKS), model=self.name)

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolDeclaration] = (), system: str | None = None
    ) -> AsyncIterator[str | ModelResponse]:
        asked = messages[-1].text or ""
        for k, chunk in enumerate(CHUNKS):
            if k:
                await asyncio.sleep(GAP_S)
            else:
                self.first_chunk[asked] = time.perf_counter()
            yield chunk
        yield ModelResponse(text="".join(CHUNKS), model=self.name)


class PreviewChannel(ReplyChannel):
    def __init__(self) -> None:
        super().__init__()
        self.first_preview: dict[str, float] = {}
        self.updates: dict[str, int] = {}
        self.finals: dict[str, str] = {}
        self._asked: dict[str, str] = {}

    async def send(self, message: OutboundMessage) -> str | None:
        chat = str(message.chat)
        if message.kind == "draft":
            self.first_preview.setdefault(chat, time.perf_counter())
            self.updates[chat] = self.updates.get(chat, 0) + 1
        elif message.kind == "text":
            self.finals[chat] = message.text
        return await super().send(message)


async def run(chats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bot-bench-") as tmp:
        settings = load_settings(
            None,
            env={},
            user_config=Path(tmp) / "none.yaml",
            overrides={
                "store": {"data_dir": str(Path(tmp) / "data")},
                "agents": {"dirs": []},
                "http": {"enabled": False},
                "log": {"level": "WARNING"},
                "routing": {"strategy": "rule"},
                "channels": {"console": {"streaming": True}},
            },
        )
        model, channel = StreamingModel(), PreviewChannel()
        gateway = Gateway(settings, model=model, channels=[channel])
        await gateway.start()
        try:
            plain = [_message(c, f"s{c}") for c in range(chats)]
            messages = [m.model_copy(update={"text": f"@chat {m.text}"}) for m in plain]
            replies = [channel.expect(m.id) for m in messages]
            await asyncio.gather(*(gateway.inbox.submit(m) for m in messages))
            await asyncio.wait_for(asyncio.gather(*replies), 60)
            await gateway.settled()
        finally:
            await gateway.stop()
    delays = []
    for m in messages:
        chat, asked = str(m.chat), m.text.removeprefix("@chat ")
        if chat in channel.first_preview and asked in model.first_chunk:
            delays.append((channel.first_preview[chat] - model.first_chunk[asked]) * 1000)
    delays.sort()
    whole = "".join(CHUNKS)
    return {
        "chats": chats,
        "first_update_p50_ms": round(statistics.median(delays), 1) if delays else None,
        "first_update_p99_ms": round(delays[int(len(delays) * 0.99) - 1], 1) if delays else None,
        "previews_per_answer": round(statistics.mean(channel.updates.values()), 1) if channel.updates else 0,
        "answer_s": round(GAP_S * (len(CHUNKS) - 1), 1),
        "finals_exact": sum(text == whole for text in channel.finals.values()),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=50)
    print(json.dumps(asyncio.run(run(parser.parse_args().chats))))
