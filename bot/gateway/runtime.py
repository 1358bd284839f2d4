"""Process-wide tuning for a running gateway (``bot run`` / ``bot chat`` and the benchmarks).

The collector.  Measured on the interrupt benchmark (2-core machine): with Python's default
collector thresholds (700, 10, 10) the collector ran about 260 times per 1,000
cycles, took 10-15 % of the loop's CPU, and its full passes stopped the loop
for 60-130 ms (the p99).  With the young threshold at 10,000 and the objects
loaded at start-up frozen, it ran 4 times and paused at most 5-9 ms.  Nothing
the gateway keeps relies on prompt cycle collection: its objects are freed by
reference counting, and the rarer collections still reclaim cycles.

The switch interval.  The event loop runs Python without a pause under load; a thread that wants the GIL
meanwhile (the store's committer, back from a ``COMMIT``'s fsync or woken for the next one) waits the switch
interval before the loop is made to hand it over: 5 ms by default, while the fsync itself takes 1-2 ms.  Every
message of that batch waited with it, and the loop ran out of work: in ``bench/gateway.py`` (200 chats,
``synchronous=FULL``) a batch spent 1.2-1.4 ms on average between being handed to the committer and its
``COMMIT`` starting, and the loop was busy 82-85 % of the time.  At 0.2 ms: 0.9 busy, and 2,331 messages a
second against 2,091 (median of 6 interleaved 10 s pairs, every pair 9-20 % ahead; in a quicker spell of the
host 2,608 against 2,493, every pair 2-5 % ahead).  0.1 ms measured the same as 0.2; 0.5 ms 4 % behind it.
Latency at 200 messages a second did not change (p50 2.2-2.3 ms against 2.1-2.5, p99 4.5-5.7 against
4.5-6.0).  The cost is a forced switch each time another thread wants the GIL: a few µs, a few hundred times a
second.
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
