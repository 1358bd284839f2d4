"""Process-wide tuning for a running gateway (``bot run`` / ``bot chat`` and the benchmarks).

The collector.  Every message allocates thousands of short-lived objects: at Python's default thresholds the
collector ran hundreds of times a second, took a noticeable share of the loop's CPU, and its full passes stopped
the loop for tens of milliseconds; a high young threshold and the start-up objects frozen make it rare and short
(see bench/README.md, "The garbage collector").  Nothing the gateway keeps relies on prompt cycle collection: its
objects are freed by reference counting, and the rarer collections still reclaim cycles.

The switch interval.  The event loop runs Python without a pause under load; a thread that wants the GIL
meanwhile (the store's committer, back from a ``COMMIT``'s fsync or woken for the next one) waits the switch
interval before the loop is made to hand it over: 5 ms by default, longer than the fsync itself.  Every message
of that batch waited with it, and the loop ran out of work; a short interval gives more messages a second at the
same latency, for a forced switch each time another thread wants the GIL (see bench/README.md, "The switch
interval").
"""

from __future__ import annotations

import gc
import logging
import sys

from bot.config.settings import RuntimeSection

log = logging.getLogger(__name__)


def tune_process(config: RuntimeSection) -> None:
    """Apply ``runtime.*`` to the collector and the interpreter's switch interval; call once, after the gateway
    started."""
    if config.gc_freeze:
        gc.collect()
        gc.freeze()
    if config.gc_threshold:
        _young, middle, old = gc.get_threshold()
        gc.set_threshold(config.gc_threshold, middle, old)
    if config.switch_interval_ms:
        sys.setswitchinterval(config.switch_interval_ms / 1000)
    log.debug(
        "runtime: gc threshold %s, %d objects frozen, switch interval %.2g ms",
        gc.get_threshold(),
        gc.get_freeze_count(),
        sys.getswitchinterval() * 1000,
    )
