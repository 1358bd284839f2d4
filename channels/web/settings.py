"""``channels.web``: chatting in the browser, on the web console's Chat page (needs ``web.enabled``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from channels.base import ChannelSection
from channels.setup import ChannelSetup, Secret


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
    """``bot init``: nothing to ask; the web console's sign-in decides who chats, so it turns the console on,
    with its admin token from the environment (users with passwords: ``bot web hash-password``)."""

    asks_admin = False
    comment = "chat in the browser, on the web console's Chat page (needs web.enabled)"

    def secrets(self, answers: Mapping[str, str]) -> list[Secret]:
        how = "the web console's admin token, to sign in: 16+ random characters (openssl rand -hex 16)"
        return [Secret("BOT_WEB__TOKEN", how, placeholder="0123456789abcdef0123456789abcdef")]

    def serves_http(self, answers: Mapping[str, str]) -> bool:
        return True  # the console is served by the HTTP server

    def listens_publicly(self, answers: Mapping[str, str]) -> bool:
        return False  # 127.0.0.1: reach it from elsewhere through an HTTPS proxy (web.trust_proxy)

    def sections(self, answers: Mapping[str, str]) -> list[str]:
        return [
            "web:",
            "  # The web console at http://127.0.0.1:8080/web: sign in with BOT_WEB__TOKEN (or users from",
            "  # `bot web hash-password`); its Chat page is the web channel.",
            "  enabled: true",
        ]


SETUP = WebChatSetup()
