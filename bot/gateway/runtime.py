"""Process-wide tuning for a running gateway (``bot run`` / ``bot chat`` and the benchmarks).

Measured on the interrupt benchmark (2-core machine): with Python's default
collector thresholds (700, 10, 10) the collector ran about 260 times per 1,000
cycles, took 10-15 % of the loop's CPU, and its full passes stopped the loop
for 60-130 ms (the p99).  With the young threshold at 10,000 and the objects
loaded at start-up frozen, it ran 4 times and paused at most 5-9 ms.  Nothing
the gateway keeps relies on prompt cycle collection: its objects are freed by
reference counting, and the rarer collections still reclaim cycles.
"""

from __future__ import annotations

import gc
import logging

from bot.config.settings import RuntimeSection

log = logging.getLogger(__name__)


def tune_gc(config: RuntimeSection) -> None:
    """Apply ``runtime.*`` to the collector; call once, after the gateway started."""
    if config.gc_freeze:
        gc.collect()
        gc.freeze()
    if config.gc_threshold:
        _young, middle, old = gc.get_threshold()
        gc.set_threshold(config.gc_threshold, middle, old)
    log.debug("gc: threshold %s, %d objects frozen", gc.get_threshold(), gc.get_freeze_count())
