"""Counters and histograms for the per-message path, updated on the event loop only.

prometheus-client's own take a lock and check their state on every update, eight of them per message (see
bench/README.md, "Metrics on the event loop").  These keep plain numbers per label set
and hand Prometheus the same families when it scrapes (``*_total`` counters; ``_bucket``/``_count``/``_sum``
histograms with the same ``le`` strings), through a collector in the same registry.

Only for what the event loop's thread updates (the intake, routing, runs, model calls, deliveries): an update
from another thread could be lost.  The store's commit timer runs on its writer thread and keeps a
prometheus-client histogram.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class CounterChild:
    """One label set of a :class:`LoopCounter`."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("counters only go up")
        self.value += amount


class HistogramChild:
    """One label set of a :class:`LoopHistogram`: a count per bucket (not cumulative) and the sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.sum += amount
        self.counts[bisect_left(self.bounds, amount)] += 1  # ``le``: a value equal to a bound is in its bucket


C = TypeVar("C", CounterChild, HistogramChild)


class _Loop(Collector, Generic[C]):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], C] = {}
        registry.register(self)

    def labels(self, *values: str) -> C:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}, got {values}")
            child = self._children[values] = self._child()
        return child

    def describe(self) -> list[Metric]:
        return [self._family()]

    def _child(self) -> C:
        raise NotImplementedError

    def _family(self) -> Metric:
        raise NotImplementedError

    def collect(self) -> Iterable[Metric]:
        raise NotImplementedError


class LoopCounter(_Loop[CounterChild]):
    """A labelled counter (``labels(*values).inc()``), exposed as prometheus-client's ``Counter`` is."""

    def _child(self) -> CounterChild:
        return CounterChild()

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for values, child in list(self._children.items()):
            family.add_metric(list(values), child.value)
        return [family]


class LoopHistogram(_Loop[HistogramChild]):
    """A labelled histogram (``labels(*values).observe(x)``), exposed as prometheus-client's ``Histogram`` is."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        registry: CollectorRegistry,
        buckets: Sequence[float],
    ) -> None:
        self.bounds = tuple(float(b) for b in buckets)
        self._les = [floatToGoString(b) for b in self.bounds] + ["+Inf"]
        super().__init__(name, documentation, labelnames, registry)

    def _child(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for values, child in list(self._children.items()):
            cumulative, buckets = 0, []
            for le, count in zip(self._les, child.counts, strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(list(values), buckets, child.sum)
        return [family]
