"""Who may act: one policy for the intake, the supervisor, the web console and the run manager.

Rights come from configuration, never from the platform: ``channels.<name>.allow_from`` and ``admins`` (``*``
for everyone), senders an admin let in with ``/pair`` (:class:`~bot.pairing.Pairing`; an admin too when the
operator approved them with ``bot pair approve CODE --admin``), and for a press made in
the web console, the signed-in user's role under ``web`` (only admins act there).  The console allows everyone
and its user is an admin because its section says ``allow_from: ["*"]``, ``admins: ["*"]``.

The ``web`` channel (the console's Chat page) is for people the console signed in: a sender there is a name the
``web`` section knows now (a user removed from ``web.users`` loses the chat at once), within
``channels.web.allow_from`` (``*`` by default); an admin when the console makes them one (role ``admin``, or the
admin token) or ``channels.web.admins`` names them.  Viewers chat as ordinary users.

It lives at the top of ``bot`` because every layer that decides asks it (the gateway's intake and supervisor,
``bot/runs`` for who pays, ``bot/web`` for console presses), and it needs only the settings and the pairing.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config.settings import ChannelSection, ChannelsSection
from bot.config.web import WebSection
from bot.events import Action, ConsoleInput, InboundEvent, Sender
from bot.pairing import Pairing

KEEP_SENDERS = 4096
"""Resolved senders kept (:meth:`AccessPolicy.admit`)."""
LOCAL_CHANNELS = frozenset({"console", "web"})
"""Channels whose users the operator let in themselves (the terminal's user, the web console's sign-ins): they
need no admin named (:meth:`AccessPolicy.without_admin`)."""
WEB_CHAT = "web"
"""The web console's Chat page: its senders are the console's users (:meth:`AccessPolicy.web_rights`)."""


def is_admin(channels: ChannelsSection, channel: str, user_id: str) -> bool:
    """An admin of ``channel`` by configuration (``channels.<name>.admins``); what :class:`AccessPolicy` asks."""
    section: ChannelSection | None = getattr(channels, channel, None)
    return section is not None and section.is_admin(user_id)


@dataclass(frozen=True)
class Admission:
    """What the policy decided about an event's sender."""

    sender: Sender
    """The sender with ``is_admin`` from configuration (a console press: the web user as a sender)."""
    allowed: bool


class AccessPolicy:
    """Decides who may use the bot, who is an admin, and who may answer a pending request."""

    def __init__(self, channels: ChannelsSection, web: WebSection, pairing: Pairing | None = None) -> None:
        self.channels = channels
        self.web = web
        self.pairing = pairing
        """Senders let in by an admin's ``/pair`` (None: ``allow_from`` only)."""
        if pairing is not None:
            pairing.configured_admins = self.has_configured_admin
        self._resolved: dict[tuple[str, str, bool, bool], Sender] = {}
        """Senders as the gateway knows them, by what makes them (a copy with ``is_admin`` changed, on every message
        where everyone is an admin, as on the console, cost many lookups: see bench/README.md; at most
        :data:`KEEP_SENDERS`, then started afresh)."""

    def section(self, channel: str) -> ChannelSection | None:
        section: ChannelSection | None = getattr(self.channels, channel, None)
        return section

    def is_admin(self, channel: str, user_id: str) -> bool:
        """An admin of ``channel`` by configuration, or let in as one by pairing (as this process last read it)."""
        if channel == WEB_CHAT:
            return self.web_rights(user_id)[1]
        if is_admin(self.channels, channel, user_id):
            return True
        return self.pairing is not None and self.pairing.known_admin(f"{channel}:{user_id}")

    def has_configured_admin(self, channel: str) -> bool:
        section = self.section(channel)
        return section is not None and bool(section.admins)

    async def without_admin(self) -> list[str]:
        """The enabled platform channels nobody can administer: no ``admins`` configured and none let in by
        ``bot pair approve CODE --admin`` (a stranger's code there waits for the operator)."""
        names = [n for n in self.channels.enabled() if n not in LOCAL_CHANNELS and not self.has_configured_admin(n)]
        if names and self.pairing is not None:
            paired = await self.pairing.store.admin_channels()
            names = [n for n in names if n not in paired]
        return names

    def is_admin_account(self, account: str) -> bool:
        """:meth:`is_admin` for ``channel:user_id`` (how jobs name their owner)."""
        channel, _, user = account.partition(":")
        return self.is_admin(channel, user)

    async def allows(self, channel: str, user_id: str) -> bool:
        """Whether ``user_id`` may use the bot in ``channel``: ``allow_from``, an admin, or paired (a read)."""
        section = self.section(channel)
        if section is None:
            return False
        if channel == WEB_CHAT:
            return self.web_rights(user_id)[0]
        if section.allows(user_id) or section.is_admin(user_id):
            return True
        return self.pairing is not None and await self.pairing.allows(channel, user_id)

    def web_rights(self, user: str) -> tuple[bool, bool]:
        """(allowed, admin) of the console user ``user`` in the ``web`` channel (see the module docstring)."""
        section = self.section(WEB_CHAT)
        role = self.web.role_of(user) if self.web.enabled else None
        if section is None or role is None or not (section.allows(user) or section.is_admin(user)):
            return False, False
        return True, role == "admin" or section.is_admin(user)

    def console_sender(self, console: ConsoleInput) -> Sender | None:
        """The web console's signed-in admin as a sender (None: no longer an admin there)."""
        if not (self.web.enabled and self.web.role_of(console.user) == "admin"):
            return None
        return Sender(id=f"web:{console.user}", name=f"{console.user} (web)", is_admin=True)

    async def allows_event(self, event: InboundEvent) -> bool:
        """Whether the event's sender may act here: :meth:`admit`'s answer without making the sender (the intake
        asks it of every event)."""
        if isinstance(event, Action) and event.console is not None:
            return self.console_sender(event.console) is not None
        return await self.allows(event.chat.channel, event.sender.id)

    async def admit(self, event: InboundEvent) -> Admission:
        """The event's sender as the gateway knows them, and whether they may act here."""
        if isinstance(event, Action) and event.console is not None:
            web = self.console_sender(event.console)
            return Admission(web, True) if web is not None else Admission(event.sender, False)
        sender, section = event.sender, self.section(event.chat.channel)
        if section is None:
            return Admission(sender.model_copy(update={"is_admin": False}) if sender.is_admin else sender, False)
        if event.chat.channel == WEB_CHAT:
            allowed, is_admin = self.web_rights(sender.id)
        else:
            is_admin = section.is_admin(sender.id)
            allowed = section.allows(sender.id) or is_admin
        if not allowed and self.pairing is not None and event.chat.channel != WEB_CHAT:
            standing = await self.pairing.standing(event.chat.channel, sender.id)
            allowed, is_admin = standing is not None, standing is True
        if sender.is_admin != is_admin:  # admin rights come from configuration (or pairing), never the platform
            sender = self._as(sender, is_admin)
        return Admission(sender, allowed)

    def _as(self, sender: Sender, is_admin: bool) -> Sender:
        """``sender`` with ``is_admin`` (the same object for the same sender)."""
        key = (sender.id, sender.name, sender.is_bot, is_admin)
        found = self._resolved.get(key)
        if found is None:
            if len(self._resolved) >= KEEP_SENDERS:
                self._resolved.clear()
            found = self._resolved[key] = sender.model_copy(update={"is_admin": is_admin})
        return found

    @staticmethod
    def may_answer(requester: str, sender: Sender) -> bool:
        """Only the person who asked (the requester), or an admin, answers, stops or cancels a request, pending or
        running: in a group, nobody cuts short another member's request."""
        return sender.id == requester or sender.is_admin

    @staticmethod
    def may_change_chat(sender: Sender, direct: bool) -> bool:
        """What changes a chat for everyone in it (clearing its shared history with ``/reset`` or ``/new``, a tool
        "always allowed" there): in a direct chat its one person, in a group an admin."""
        return direct or sender.is_admin

    ONLY_REQUESTER = "Only the person who asked (or an admin) can {what} this request."
    ONLY_ADMIN_IN_GROUP = "In a group only an admin can {what}; it would change this chat for everyone."
