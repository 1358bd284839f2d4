"""Errors every part may raise, channels included (a contract module: it imports nothing)."""


class ConfigError(Exception):
    """The operator's configuration is wrong; the message names file and field."""
