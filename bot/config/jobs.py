"""The ``jobs`` section: recurring work per chat (``schedule_job``, ``/jobs``, ``/timezone``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.config.checks import iana_zone


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JobRetry(_Section):
    attempts: int = Field(2, ge=0, le=10)
    """Further tries of a fire whose agent run failed (0: none; the chat is told either way)."""
    delay_s: float = Field(300, ge=1)


class JobsSection(_Section):
    enabled: bool = True
    timezone: str = "UTC"
    """A chat's time zone until ``/timezone`` sets one (an IANA name)."""
    max_per_chat: int = Field(20, ge=0)
    max_per_user: int = Field(50, ge=0)
    max_reminders_per_chat: int = Field(50, ge=0)
    """Pending one-off messages (the ``schedule_message`` tool) a chat may have at once."""
    max_reminders_per_user: int = Field(100, ge=0)
    """…and one person may have asked for, over all chats."""
    min_interval_s: float = Field(300, ge=0)
    """The shortest time allowed between two fires of a job (cron expressions are checked over their next
    fires)."""
    grace_s: float = Field(3600, ge=0)
    """A fire missed while the bot was down runs once at start if it is at most this late, else it is recorded
    as missed and the chat told."""
    retry: JobRetry = Field(default_factory=JobRetry)

    _zone = field_validator("timezone")(iana_zone)
