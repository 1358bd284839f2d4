"""What ``bot run`` says while it starts: a person at a terminal never waits in silence.

The platform libraries are the slow part (importing aiogram took 4.6-8.9 s on a loaded machine, 6 s on an idle
one): each is loaded with a line before and the time it took after, before the gateway is built.  (A background
import would not be faster: importing is CPU work under one interpreter lock.)  A malformed token is refused
before this, when the settings load.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from channels.registry import PLUGINS


def load_platform_libraries(channels: list[str], progress: Callable[[str], None]) -> None:
    """Import the adapters of ``channels`` (the console's is instant), saying so before and after each."""
    for name in channels:
        plugin = PLUGINS.get(name)
        if plugin is None or plugin.library is None:
            continue
        began = time.monotonic()
        progress(f"{name}: loading {plugin.library} (a few seconds)…")
        plugin.adapter()  # imports the adapter's module (the platform library with it)
        progress(f"{name}: {plugin.library} loaded in {time.monotonic() - began:.1f} s")
