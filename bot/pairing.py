"""Pairing: letting a colleague in without editing ``allow_from`` and restarting.

A sender outside ``allow_from`` who writes to the bot directly (``channels.<name>.unknown_senders: pair``, the
default on the platforms) gets a one-time code and their id.  An admin sends ``/pair CODE`` in any chat (or
presses Approve in the web console's inbox), or the operator runs ``bot pair approve CODE`` (:mod:`bot.cli.pair`,
through the store, beside a running bot): from that commit on the sender is allowed, in this process at once and
in the others at their next message from that sender (each process asks the store about a sender it does not
know, and again after :data:`BELIEVED_S`).  ``/unpair`` (``bot pair revoke``) lets them out again.  All are in the
audit log.  Codes expire (``pairing.code_minutes``), a sender has one at a time, a channel at most
``pairing.max_pending`` waiting, and only admins (or the operator) can use them, so a code is worth nothing to
anyone who sees it.  Admin rights come from ``admins``, and from ``bot pair approve CODE --admin``: how a bot set up
without an admin gets its first one (the paired sender is an admin too).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.pairing import PairingSection
from bot.events import ChatKey, InboundMessage, OutboundMessage
from bot.store.ports import AuditLog, PairingRepo
from bot.store.values import WaitingCode, normal_code, shown_code

log = logging.getLogger(__name__)

BELIEVED_S = 30.0
"""How long this process believes a sender is paired before asking the store again (another process may have
unpaired them: a worker, or ``bot pair revoke`` beside a running bot)."""
FULL_QUIET_S = 60.0
"""After a channel was found full of waiting codes, how long strangers of that channel are told so without a
write being tried."""
_KEEP = 10_000


@dataclass(frozen=True)
class Approval:
    """What ``/pair CODE`` did: a reply for the admin, and for the sender (None: nothing to tell them)."""

    reply: str
    tell: OutboundMessage | None = None


@dataclass(frozen=True)
class PairingDesk:
    """What the web console's inbox does with pairing: list the codes waiting, approve one as a person
    (``approve(code, actor)`` returns what to show; the sender is told in their chat)."""

    waiting: Callable[[], Awaitable[list[WaitingCode]]]
    approve: Callable[[str, str], Awaitable[str]]


class Pairing:
    """Who was let in by pairing (asked of the store, kept while known), and the codes' life cycle."""

    def __init__(self, config: PairingSection, store: PairingRepo, runs: AuditLog, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.store = store
        self.runs = runs
        self.clock = clock
        self._known: OrderedDict[str, tuple[float, bool]] = OrderedDict()
        """Paired accounts this process knows of: when that was read (monotonic), and whether they are admins."""
        self._full: dict[str, float] = {}
        self.configured_admins: Callable[[str], bool] = lambda _channel: True
        """Whether a channel has an admin by configuration (set by the access policy): a stranger of a channel
        without any is told the operator can approve them from the command line."""

    async def allows(self, channel: str, user_id: str) -> bool:
        """Whether an admin paired this sender (a read of the store unless this process knows they are)."""
        return await self.standing(channel, user_id) is not None

    async def standing(self, channel: str, user_id: str) -> bool | None:
        """None: not paired; else whether the paired sender is an admin too (a read of the store unless this
        process read it within :data:`BELIEVED_S`)."""
        account, now = f"{channel}:{user_id}", self.clock.monotonic()
        seen = self._known.get(account)
        if seen is not None and now - seen[0] < BELIEVED_S:
            return seen[1]
        admin = await self.store.standing(channel, user_id)
        if admin is None:
            self._known.pop(account, None)
            return None
        self._remember(account, now, admin)
        return admin

    def known_admin(self, account: str) -> bool:
        """An admin let in by pairing, as this process last read it (no read: for checks that cannot wait)."""
        seen = self._known.get(account)
        return seen is not None and seen[1]

    def _remember(self, account: str, now: float, admin: bool = False) -> None:
        self._known[account] = (now, admin)
        self._known.move_to_end(account)
        while len(self._known) > _KEEP:
            self._known.popitem(last=False)

    async def offer(self, event: InboundMessage) -> str:
        """What a stranger who wrote to the bot directly is told: their code (the one they have, or a new one)."""
        channel, sender = event.chat.channel, event.sender
        full_since = self._full.get(channel)
        if full_since is None or self.clock.monotonic() - full_since >= FULL_QUIET_S:
            code = await self.store.issue(
                channel,
                sender.id,
                sender.name or "",
                str(event.chat),
                self.config.code_minutes,
                self.config.max_pending,
            )
            if code is not None:
                self._full.pop(channel, None)
                log.info("pairing: a code for %s:%s waits for an admin", channel, sender.id)
                shown = shown_code(code.code)
                operator = ""
                if not await self.has_admin(channel):
                    operator = (
                        f" This bot has no admin yet: if you run it, let yourself in as its admin from its command "
                        f"line with `bot pair approve {shown} --admin`."
                    )
                return (
                    f"I don't know you yet. To be let in, give an admin of this bot this code: {shown}"
                    f" (they send /pair {shown}; it is valid for {_left(code, self.clock)}).{operator} "
                    f"Your user id is {sender.id}."
                )
            self._full[channel] = self.clock.monotonic()
        return (
            f"I don't know you yet, and too many people are waiting to be let in right now. "
            f"Your user id is {sender.id}: ask the operator to add it to allow_from."
        )

    async def has_admin(self, channel: str) -> bool:
        """Whether ``channel`` has an admin: by configuration, or let in by ``bot pair approve CODE --admin``."""
        return self.configured_admins(channel) or channel in await self.store.admin_channels()

    async def approve(self, text: str, actor: str, *, admin: bool = False) -> Approval:
        """``/pair CODE`` by the admin ``actor`` (``web:<name>`` from the console, ``cli:<user>`` from ``bot pair
        approve``); ``admin``: the sender becomes an admin too."""
        code = await self.store.find(normal_code(text))
        if code is None:
            return Approval(f"No pairing code {text.strip()!r} is waiting (it may have expired; /pair lists them).")
        audit = self.runs.audit_step(actor, "pairing", "pair_admin" if admin else "pair", None, code.account)
        if not await self.store.approve(code, actor, [audit], admin=admin):
            return Approval(f"The code {shown_code(code.code)} was used or expired meanwhile; nothing was changed.")
        self._remember(code.account, self.clock.monotonic(), admin)
        who = f" ({code.user_name})" if code.user_name else ""
        tell = OutboundMessage(
            chat=ChatKey.parse(code.chat_key),
            text="✅ An admin let you in: you can talk to me now. Send /help to see what I can do.",
            kind="notice",
        )
        as_admin = " as an admin" if admin else ""
        return Approval(
            f"✅ Paired {code.channel} user {code.user_id}{who}{as_admin}: they can talk to me now "
            f"(/unpair {code.account} lets them out again).",
            tell,
        )

    async def revoke(self, account: str, actor: str) -> bool:
        """``/unpair CHANNEL:USER``: False when that account was not paired."""
        channel, _, user_id = account.partition(":")
        audit = self.runs.audit_step(actor, "pairing", "unpair", account, None)
        revoked = await self.store.unpair(channel, user_id, [audit])
        self._known.pop(account, None)
        return revoked

    async def listing(self) -> str:
        """``/pair``: the codes waiting for an admin and who was let in."""
        waiting, paired = await self.store.waiting(), await self.store.paired()
        lines = []
        if waiting:
            lines.append("Waiting to be let in (approve with /pair CODE):")
            for code in waiting:
                who = f" ({code.user_name})" if code.user_name else ""
                lines.append(
                    f"• {shown_code(code.code)}: {code.channel} user {code.user_id}{who}, "
                    f"{_left(code, self.clock)} left"
                )
        else:
            lines.append("Nobody is waiting to be let in.")
        if paired:
            lines.append("Let in by pairing (/unpair CHANNEL:USER lets one out):")
            for p in paired:
                who = f" ({p.user_name})" if p.user_name else ""
                admin = ", an admin" if p.is_admin else ""
                lines.append(f"• {p.account}{who}{admin}, by {p.approved_by} on {p.approved_at:%Y-%m-%d}")
        return "\n".join(lines)


def _left(code: WaitingCode, clock: Clock) -> str:
    seconds = max(0.0, (code.expires_at - clock.utcnow()).total_seconds())
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{seconds / 3600:.0f} h"
