"""The toy channel's adapter: it receives nothing and keeps what it is asked to send."""

from __future__ import annotations

from bot.events import OutboundMessage
from bot.inbox import Inbox
from channels.base import BuildContext
from tests.channels.toy.settings import ToySettings


class ToyChannel:
    name = "toy"

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []

    async def start(self, inbox: Inbox) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, message: OutboundMessage) -> str | None:
        self.sent.append(message)
        return str(len(self.sent))


def build(settings: ToySettings, context: BuildContext) -> ToyChannel:
    return ToyChannel()
