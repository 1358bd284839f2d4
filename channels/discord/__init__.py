"""The Discord channel, on discord.py 2.x.

Inbound, over the gateway (the message-content intent is required):

* chat keys: a guild channel is ``discord:<channel id>``; a message in a thread is
  ``discord:<parent channel id>:<thread id>`` (chat settings belong to the channel, the conversation to the
  thread); a DM is ``discord:<DM channel id>`` with ``is_direct``.
* messages from bots (this one included) and webhooks are ignored; ``allowed_channels`` limits the guild
  channels the bot listens in (a thread counts as its parent; DMs always pass, ``allow_from`` governs them).
* ``mentions_bot``: the bot's user (or its managed role) is mentioned, or the message replies to the bot;
  the bot's own mention is stripped from the text.
* buttons are a :class:`PayloadButton` (a ``DynamicItem`` whose template matches ``v1:<id>:<nonce>:<choice>``),
  registered in ``setup_hook``, so a press on a prompt sent before a restart still arrives.  A press is
  deferred at once (within Discord's 3 seconds), then the inbox's ``check_press`` runs: a refusal is sent as an
  ephemeral followup and the press is dropped; otherwise an :class:`~bot.events.Action` is published.

Outbound, over REST (``send`` logs the client in on first use, so it works before ``start``):

* message references are ``"<channel id>:<message id>"`` (a thread's id for a thread); edits go through the
  press's interaction while its token is fresh (14 of its 15 minutes), else through the channel message
  endpoint, which also works after a restart.
* text is rendered with :mod:`channels.formatting` and split at 2,000 characters (buttons on the last
  message); up to 5 rows of 5 buttons; ``typing`` is refreshed every 8 seconds (Discord shows it for 10)
  until the next message to that channel, at most 2 minutes.
* 429s: discord.py waits and retries those that carry Discord's headers (up to 5 tries, longer waits than
  30 s are handed back); around every call this adapter retries the rest (429s from proxies, 5xx, network
  errors) after ``Retry-After`` or a backoff, within 8 attempts and 5 minutes, reusing the message nonce so
  Discord never posts a retried message twice; then it raises :class:`DiscordError`.
* sent once: each part of a message carries a nonce derived from the message's idempotency key
  (``OutboundMessage.key``: the run's reply, the prompt, the job run), and discord.py sends every nonce with
  ``enforce_nonce``; so a committed message sent again after a crash (the next start, or another process)
  comes back from Discord as the message it already has, within Discord's memory of nonces (a few minutes).

``api_base`` (and ``gateway_url``) point discord.py elsewhere (tests, proxies).  discord.py keeps both
in class attributes, so they apply to the whole process: one Discord adapter per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from channels.discord.adapter import DiscordChannel
    from channels.discord.calls import DiscordError

__all__ = ["DiscordChannel", "DiscordError"]


def __getattr__(name: str) -> Any:
    # The adapter loads only when used: the settings module stays light (no platform library).
    if name == "DiscordChannel":
        from channels.discord.adapter import DiscordChannel

        return DiscordChannel
    if name == "DiscordError":
        from channels.discord.calls import DiscordError

        return DiscordError
    raise AttributeError(name)
