"""The ``tracing`` section: trace events of every run (``/trace``, ``bot trace``) and their OpenTelemetry export."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


TraceEventType = Literal[
    "route", "llm_call", "tool_call", "handoff", "guardrail", "interrupt", "error", "run", "memory", "summary"
]


class OtelSection(_Section):
    enabled: bool = False
    """Export trace events as OpenTelemetry spans (needs ``pip install opentelemetry-sdk``)."""
    endpoint: str = ""
    """OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces (needs the OTLP exporter package)."""
    service_name: str = "supervisor-bot"


class TracingSection(_Section):
    """Trace events of every run (``/trace``, ``bot trace``)."""

    enabled: bool = True
    retention_days: float = Field(14, gt=0)
    flush_interval_s: float = Field(0.5, gt=0)
    """Buffered events are written at least this often (one group commit for all of them)."""
    max_buffer: int = Field(64, ge=1)
    """Write earlier when this many events are waiting (small writes keep each one from stalling the loop; see
    bench/README.md, "Trace events written in small batches")."""
    sample_rate: float = Field(1.0, ge=0, le=1)
    """The share of requests traced (decided per request, so a request is traced whole or not at all);
    errors are always kept."""
    events: list[TraceEventType] = Field(default_factory=list)
    """Only these kinds of event are kept (empty: all); errors are always kept."""
    otel: OtelSection = Field(default_factory=OtelSection)
