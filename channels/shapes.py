"""Offline shape checks of the platforms' secrets: what is wrong with a token, said without quoting it.

Each check returns why a value cannot be what it should be (``starts with xapp-…: that is the app token``), or
None.  Run when the settings load (``bot run`` refuses to start, ``bot doctor`` shows a ✗), before any network
and before the platform's library is imported.  A message may show a known public prefix (``xapp-…``) and the
value's length, never the secret itself.
"""

from __future__ import annotations

import re

BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")
HEX = re.compile(r"^[0-9a-fA-F]+$")


def pasting_problem(value: str) -> str | None:
    """The usual copy-and-paste slips: quotes kept, a space or line break, a ``Bot``/``Bearer`` prefix."""
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return "is wrapped in quotes (write the value alone)"
    for prefix in ("Bot ", "Bearer "):
        if value.startswith(prefix):
            return f"starts with {prefix.strip()!r} and a space: the bot adds that itself (write the token alone)"
    if value != value.strip():
        return "has a space or line break before or after it"
    if any(c.isspace() for c in value):
        return "contains a space or a line break"
    return None


def slack_token_problem(token: str, wanted: str) -> str | None:
    """Why ``token`` is not a Slack ``wanted`` token (``bot``: ``xoxb-…``, ``app``: ``xapp-…``)."""
    pasted = pasting_problem(token)
    if pasted:
        return pasted
    if wanted == "bot":
        if token.startswith("xoxb-") or token.startswith("xoxe.xoxb-"):  # the second: a rotating token
            return None
        if token.startswith("xapp-"):
            return "starts with xapp-…: that is the app token; SLACK_BOT_TOKEN and SLACK_APP_TOKEN look swapped"
        if token.startswith("xoxp-"):
            return "starts with xoxp-…: that is a user token, not the bot's (Bot User OAuth Token, xoxb-…)"
        return f"is not a bot token: it does not start with xoxb- ({len(token)} characters)"
    if token.startswith("xapp-"):
        return None
    if token.startswith("xoxb-"):
        return "starts with xoxb-…: that is the bot token; SLACK_BOT_TOKEN and SLACK_APP_TOKEN look swapped"
    return f"is not an app-level token: it does not start with xapp- ({len(token)} characters)"


def slack_signing_secret_problem(secret: str) -> str | None:
    pasted = pasting_problem(secret)
    if pasted:
        return pasted
    if secret.startswith(("xoxb-", "xapp-", "xoxp-")):
        return f"starts with {secret[:5]}…: that is a token, not the signing secret"
    if not HEX.match(secret):
        return (
            f"is not a signing secret: Slack's is 32 hexadecimal digits (0-9, a-f); "
            f"this is {len(secret)} characters, not all hexadecimal"
        )
    return None


def discord_token_problem(token: str) -> str | None:
    pasted = pasting_problem(token)
    if pasted:
        return pasted
    parts = token.split(".")
    if len(parts) == 3 and all(BASE64URL.match(p) for p in parts):
        return None
    if len(parts) == 1 and len(token) == 32 and BASE64URL.match(token):
        return "looks like the OAuth2 client secret (32 characters, no dots), not the bot token"
    return (
        f"is not a bot token: it should be three parts separated by dots (letters, digits, - and _); "
        f"here {len(parts)} part(s), {len(token)} characters"
    )


def telegram_token_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bot token (aiogram's own rule: digits, a colon, the rest)."""
    pasted = pasting_problem(token)
    if pasted:
        return pasted
    bot_id, colon, secret = token.partition(":")
    if bot_id.lower().startswith("bot") and bot_id[3:].isdigit():
        return "starts with 'bot' (as in the API's URLs): write the token alone, 123456:ABC…"
    if not colon or not bot_id.isdigit() or not secret:
        return "is not a bot token (expected the bot's number, a colon and the secret: 123456:ABC…)"
    return None
