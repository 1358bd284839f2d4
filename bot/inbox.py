"""The inbox contract: where channel adapters hand over inbound events.

An adapter tells its platform "received" (advances Telegram's offset, answers a
webhook or Slack request with 200, acks a Socket Mode envelope) only after
:meth:`Inbox.submit` returned: the event is committed then.  :class:`NotStored`
(the database refused the write, or the gateway is stopping) means the opposite:
do not acknowledge, the platform delivers the event again.  The implementation
is :class:`bot.gateway.intake.DurableInbox`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

from bot.events import Action, InboundEvent


class Receipt(StrEnum):
    """What became of a submitted event; every receipt may be acknowledged to the platform."""

    ACCEPTED = "accepted"
    """Committed and on its way to the supervisor."""
    DUPLICATE = "duplicate"
    """Seen before (a platform's redelivery): already stored."""
    REFUSED = "refused"
    """Not stored, and the sender was told why (or was told recently)."""
    IGNORED = "ignored"
    """Not stored, nothing to tell (a bot's message, an empty one, a stranger's press)."""


class NotStored(RuntimeError):
    """The event was not committed: the platform must not hear "received" (it delivers again)."""


class InboxClosed(NotStored):
    """The gateway is stopping: nothing new is taken."""


class Inbox(Protocol):
    """Where channel adapters hand over inbound events (see the module docstring)."""

    async def submit(self, event: InboundEvent) -> Receipt:
        """Store ``event`` durably (or refuse it), then hand it on; acknowledge the platform after this returns."""

    async def submit_many(self, events: Sequence[InboundEvent]) -> list[Receipt]:
        """:meth:`submit` for a batch (one commit for all of it), in order."""

    async def check_press(self, action: Action) -> str | None:
        """Why a button press would be refused (a short text to show the presser at once), or None.

        For adapters that answer a press before it is submitted (a toast, an ephemeral reply); the
        authoritative check is repeated in the chat's turn.
        """
