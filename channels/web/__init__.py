"""The ``web`` channel: chat with the bot in the web console's Chat page (``bot/web/chat_page.py`` is its
"platform": it signs people in and carries their messages, presses and files to
:class:`channels.web.adapter.WebChatChannel`).  The settings are imported with the registry; the adapter only
when the channel is enabled."""
