"""``channels.web``: chatting in the browser, on the web console's Chat page (needs ``web.enabled``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from channels.base import ChannelSection
from channels.setup import ChannelSetup


class WebChatSettings(ChannelSection):
    """Off by default, as every channel but the terminal: turning it on is one line beside ``web.enabled``.

    Who may chat is whom the console signed in (``web.users``, or the admin token): each person has their own
    direct chat ``web:<name>``.  ``allow_from`` (``*``: every signed-in person) can narrow that to some names;
    console admins (role ``admin``, the admin token) are the chat's admins, and ``admins`` may name more.
    """

    enabled: bool = False
    allow_from: list[str] = Field(default_factory=lambda: ["*"])
    mention_policy: Literal["mention", "all"] = "all"
    unknown_senders: Literal["pair", "reply", "ignore"] = "reply"
    """A signed-in person left out by ``allow_from`` is told so (a pairing code would mean nothing here)."""
    max_upload_mb: float = Field(20, gt=0, le=1024)
    """The largest file one upload may carry (the media section's caps then apply as on every channel)."""
    keep_messages: int = Field(200, ge=10, le=10_000)
    """Messages of a chat the page shows (kept in memory; after a restart, the stored history)."""


class WebChatSetup(ChannelSetup):
    """``bot init``: nothing to ask; the web console's sign-in decides who chats."""

    asks_admin = False
    comment = "chat in the browser, on the web console's Chat page (needs web.enabled)"


SETUP = WebChatSetup()
