"""A channel that lives in the tests: registered with one line (``register(PLUGIN)``), it shows up in ``bot init``,
``bot doctor``, the settings and the command line, none of which names it."""

from __future__ import annotations

from channels.base import ChannelPlugin
from tests.channels.toy.settings import ToySettings

PLUGIN = ChannelPlugin(
    "toy",
    ToySettings,
    "tests.channels.toy.adapter:build",
    ("TOY_TOKEN",),
    text_limit=500,
    doctor="tests.channels.toy.doctor:check",
    setup="tests.channels.toy.setup:SETUP",
)
