"""Memory: what the bot remembers about each person (recalled before a turn, the ``remember`` / ``recall`` /
``forget`` tools, ``/memory``), agents' session keys, and the running summary of long chats."""
