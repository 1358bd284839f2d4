"""Telegram (aiogram 3): ``TelegramChannel`` and its parts.

* :mod:`channels.telegram.adapter`: the channel (its lifecycle, polling / webhook, button presses);
* :mod:`channels.telegram.outbound`: its sending side (posts, edits, drafts, typing);
* :mod:`channels.telegram.inbound`: updates → events (mentions, commands, topics, media);
* :mod:`channels.telegram.delivery`: Bot API calls with flood control and retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from channels.telegram.adapter import TelegramChannel

__all__ = ["TelegramChannel"]


def __getattr__(name: str) -> Any:
    # The adapter loads only when used: the settings module stays light (no platform library).
    if name == "TelegramChannel":
        from channels.telegram.adapter import TelegramChannel

        return TelegramChannel
    raise AttributeError(name)
