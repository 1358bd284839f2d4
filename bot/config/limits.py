"""The ``limits`` section: what one chat, sender or message may cost (the intake and routing enforce it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LimitsSection(_Section):
    """What one chat, sender or message may cost (the intake and routing enforce them)."""

    max_text_chars: int = Field(100_000, ge=100)
    """Longer inbound texts are refused with a clear notice (nothing is stored)."""
    route_chars: int = Field(16_384, ge=100)
    """Routing reads this prefix of a long message (the agent still gets all of it)."""
    chat_queue_notice: int = Field(20, ge=1)
    """A chat with this many messages waiting gets one "slow down" notice."""
    chat_queue_max: int = Field(100, ge=1)
    """Past this many waiting, a chat's newest messages are refused (with a notice) instead of queued."""
    sender_rate_per_min: float = Field(30, ge=0)
    """Messages a sender may send per minute on average (token bucket; admins exempt; 0 = no limit)."""
    sender_burst: int = Field(20, ge=1)
    """Messages a sender may send at once before the rate applies."""
    notice_interval_s: float = Field(60, gt=0)
    """At most one "too many"/"too fast" notice per chat or sender in this many seconds."""
    unknown_sender_reply_s: float = Field(3600, ge=0)
    """At most one "you are not allowed" reply per unknown sender in this many seconds."""

    @model_validator(mode="after")
    def _bounds(self) -> LimitsSection:
        if self.chat_queue_notice > self.chat_queue_max:
            raise ValueError("chat_queue_notice must not exceed chat_queue_max")
        return self
