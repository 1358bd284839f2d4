"""What every channel adapter provides to the gateway."""

from __future__ import annotations

from typing import Protocol

from bot.events import OutboundMessage
from bot.inbox import Inbox


class Channel(Protocol):
    """A platform adapter.

    ``start`` begins receiving and returns: every :class:`~bot.events.InboundMessage`
    and :class:`~bot.events.Action` goes to :meth:`Inbox.submit`, and the platform is
    told "received" only after it returned (the event is committed then); ``send``
    delivers one outbound message and returns the platform message reference
    (so a prompt can be edited later, even after a restart).

    Optional, duck-typed extras an adapter may have:

    * ``press_check``: an attribute the gateway sets to an async function
      ``(Action) -> str | None``; the adapter calls it when a button is pressed
      and answers the platform at once with a toast (the refusal, or a short
      "✓"); a refused press is not published.
    * ``needs_http`` (bool) and ``mount(http: bot.gateway.http.HttpServer)``: routes on
      the shared aiohttp server (webhooks), added before it starts.

    ``send`` gets ``kind="typing"`` to show activity (refreshed by the adapter
    until its next message to that chat), ``edit_of`` (a reference ``send``
    returned earlier) to edit a prompt, and ``kind="notice"`` for short status
    lines.
    """

    name: str

    async def start(self, inbox: Inbox) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, message: OutboundMessage) -> str | None: ...
