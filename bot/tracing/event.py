"""One trace event: a decision of a run (route, model call, tool call, handoff, pause…), as stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.ids import fast_id
from bot.store.values import utcnow


@dataclass
class TraceEvent:
    type: str
    chat_key: str
    correlation_id: str
    run_id: str = ""
    agent: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=fast_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "at": self.at.isoformat(timespec="milliseconds"),
            "chat_key": self.chat_key,
            "correlation_id": self.correlation_id,
            "run_id": self.run_id,
            "agent": self.agent,
            **self.data,
        }
