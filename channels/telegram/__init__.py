"""Telegram (aiogram 3): ``TelegramChannel`` and its parts.

* :mod:`channels.telegram.adapter`: the channel (polling / webhook, send, edit, typing);
* :mod:`channels.telegram.inbound`: updates → events (mentions, commands, topics, media);
* :mod:`channels.telegram.delivery`: Bot API calls with flood control and retries.
"""

from channels.telegram.adapter import TelegramChannel

__all__ = ["TelegramChannel"]
