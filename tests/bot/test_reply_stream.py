"""A preview being sent when the answer ends is let finish, never cancelled mid-request: a platform library can
keep a cancelled request's rate-limit slot (discord.py then held the final edit for its 30 s timeout)."""

from __future__ import annotations

import asyncio

from bot.delivery import Delivery
from bot.events import ChatKey, OutboundMessage
from bot.runs.streaming import ReplyStream
from tests.waiting import eventually


class SlowEdits:
    """A channel whose preview edits take until the test lets them land."""

    name = "slow"

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []
        self.editing = asyncio.Event()
        self.land = asyncio.Event()
        self.cancelled = 0

    async def send(self, message: OutboundMessage) -> str | None:
        if message.edit_of is not None and message.kind == "draft":
            self.editing.set()
            try:
                await self.land.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        self.sent.append(message)
        return "m1"


async def test_the_answer_ending_waits_for_the_preview_in_flight_instead_of_cancelling_it() -> None:
    channel = SlowEdits()
    delivery = Delivery()
    delivery.register(channel)
    chat = ChatKey.parse("slow:c1")
    stream = ReplyStream(delivery, chat, reply_to=None, limit=4000, first_s=0, every_s=0)
    await stream.write("First part, ")
    await eventually(lambda: channel.sent, what="the first preview")
    await stream.write("second part.")
    await asyncio.wait_for(channel.editing.wait(), 10)  # the edit is on its way to the platform

    final = asyncio.ensure_future(stream.final(OutboundMessage(chat=chat, text="First part, second part.")))
    for _ in range(20):
        await asyncio.sleep(0)  # the answer's end has its turns: it must not cut the edit off
    assert channel.cancelled == 0 and not final.done()
    channel.land.set()
    reply = await asyncio.wait_for(final, 10)
    assert reply.edit_of == "m1" and channel.cancelled == 0
    assert [m.text for m in channel.sent] == ["First part, …", "First part, second part. …"]
