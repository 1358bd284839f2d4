"""The ``pairing`` section: how unknown senders ask to be let in (``channels.<name>.unknown_senders: pair``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PairingSection(BaseModel):
    """A stranger who writes to the bot directly gets a one-time code; an admin's ``/pair CODE`` (in any chat, or
    the web console's inbox) lets them in at once, until ``/unpair``."""

    model_config = ConfigDict(extra="forbid")

    code_minutes: float = Field(60, gt=0, le=7 * 24 * 60)
    """How long a code waits for an admin; the sender gets the same code until then, a new one after."""
    max_pending: int = Field(20, ge=1, le=10_000)
    """Codes waiting per channel at most: past it, strangers are told to ask the operator (a flood of new
    accounts cannot fill the table)."""
