"""Files people send (downloaded, checked, given to the model) and files the bot sends (``send_file``).

:mod:`bot.media.fetch` is the contract channels implement (imported by them, so it stays light); the
intake, the sniffing and the service are the gateway's.
"""
