"""The process sections: ``bot`` (its name and greeting), ``log`` and ``runtime`` (the Python process of
``bot run`` / ``bot chat``: the collector and the switch interval)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BotSection(_Section):
    name: str = "bot"
    greeting: str = ""


class LogSection(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"  # json: one object per line, with the request's correlation id


class RuntimeSection(_Section):
    """The Python process of ``bot run`` / ``bot chat`` (an embedded gateway, e.g. in tests, leaves it alone)."""

    gc_threshold: int = Field(10_000, ge=0)
    """Tracked allocations between young-generation collections; 0 keeps Python's default (700).

    Every message allocates thousands of short-lived objects; at 700 the collector ran hundreds of times per second
    and its full passes paused the loop (see bench/README.md, "The garbage collector")."""
    gc_freeze: bool = True
    """After start-up, move what is loaded (modules, schemas, agents, tools) out of the collector's scans."""
    switch_interval_ms: float = Field(0.2, ge=0)
    """How long a thread that wants the GIL waits before the running one must hand it over; 0 keeps Python's
    (5 ms).  The store's committer thread needs the GIL after each fsync, while the event loop runs Python
    without pause: at 5 ms the committed batch waited for it, and so did every message in that batch (see
    :mod:`bot.gateway.runtime`, and bench/README.md, "The switch interval")."""
