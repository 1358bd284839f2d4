"""``python -m bot``: the same as the ``bot`` command."""

from bot.cli.main import main

main()
