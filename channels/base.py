"""What every channel adapter provides to the gateway, its settings' common keys, and its plugin entry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, runtime_checkable

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.channels import ChannelSection as ChannelSection  # its settings' common keys (a contract)
from bot.events import OutboundMessage
from bot.inbox import Inbox
from bot.media.fetch import MediaFetcher
from channels.setup import ChannelSetup

if TYPE_CHECKING:
    from bot.http import HttpServer


class Channel(Protocol):
    """A platform adapter.

    ``start`` begins receiving and returns: every :class:`~bot.events.InboundMessage`
    and :class:`~bot.events.Action` goes to :meth:`Inbox.submit`, and the platform is
    told "received" only after it returned (the event is committed then); a button press
    may first be checked with :meth:`Inbox.check_press`, to answer the platform at once
    with a toast.  ``send`` delivers one outbound message and returns the platform message
    reference (so a prompt can be edited later, even after a restart).

    ``send`` gets ``kind="typing"`` to show activity (refreshed by the adapter
    until its next message to that chat), ``edit_of`` (a reference ``send``
    returned earlier) to edit a prompt, and ``kind="notice"`` for short status
    lines.  Optional features are the protocols below.
    """

    name: str

    async def start(self, inbox: Inbox) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, message: OutboundMessage) -> str | None: ...


@runtime_checkable
class ServesHttp(Protocol):
    """Routes on the shared aiohttp server (webhooks), added before it starts (when ``needs_http``)."""

    needs_http: bool

    def mount(self, http: HttpServer) -> None: ...


@runtime_checkable
class LimitsText(Protocol):
    """The longest text one message holds: longer confirmations are shown locked (preview, Show all)."""

    text_limit: int


@runtime_checkable
class ForgetsMessages(Protocol):
    """A terminal: nothing it showed survives a restart, so a pending prompt is shown again at start."""

    forgets_messages: bool


@runtime_checkable
class PrintsAsWritten(Protocol):
    """Shows an answer's text as it comes (a terminal): previews are sent at once, each carrying all the text
    so far, and the channel shows only what is new."""

    prints_as_written: bool


@runtime_checkable
class Exclusive(Protocol):
    """A connection of which the platform allows one per bot (Telegram long polling, a Discord gateway
    session): when several gateway processes run, only the holder of the lease named ``exclusive_key``
    receives through it (all of them can send).  None: any number may receive (webhooks, Slack)."""

    @property
    def exclusive_key(self) -> str | None: ...


@runtime_checkable
class Closable(Protocol):
    """Has connections to close after the last message was sent."""

    async def close(self) -> None: ...


@dataclass(frozen=True)
class BuildContext:
    """What the gateway gives a channel factory beyond the channel's own settings."""

    settled: Callable[[], Awaitable[None]] | None = None
    """Waits until everything received so far was handled (a console uses it to pace its prompt)."""
    rate_limited: Callable[[str], None] | None = None
    """Told the channel's name each time its platform answers 429 (a metric)."""
    clock: Clock = SYSTEM_CLOCK
    """The gateway's clock (a test's fake one too): every wait and back-off of the channel goes on it."""
    started: Callable[[], Awaitable[object]] | None = None
    """Waits until the gateway has started (a terminal shows its first prompt after the start-up lines)."""

    def limiter(self, channel: str) -> Callable[[], None] | None:
        """``rate_limited`` for ``channel``: what its adapter calls on a 429."""
        told = self.rate_limited
        return None if told is None else lambda: told(channel)


@dataclass(frozen=True)
class Finding:
    """One line of ``bot doctor`` about a channel: what was checked and how it went, and the fix when it failed."""

    ok: bool
    what: str
    fix: str = ""


S = TypeVar("S", bound=ChannelSection)

ChannelFactory = Callable[[S, BuildContext], Channel]
"""Makes the channel's adapter from its settings and what the gateway gives (:class:`BuildContext`)."""
FetcherFactory = Callable[[S], MediaFetcher]
"""Makes the channel's downloader of what people attach, from its settings alone (a worker can download too)."""
DoctorCheck = Callable[[S], Awaitable[list[Finding]]]
"""The platform's answer to the channel's credentials (``bot doctor``)."""


@dataclass(frozen=True)
class ChannelPlugin(Generic[S]):
    """A channel as the gateway knows it: its name (the key under ``channels``), its settings model, and typed
    references to the rest: small functions that import inside and return the object (the adapter's factory,
    the fetcher's, the doctor's check, the setup), so a platform library loads only when the channel is enabled
    (aiogram takes seconds to import) and mypy checks each against the settings model."""

    name: str
    settings: type[S]
    adapter: Callable[[], ChannelFactory[S]]
    """Called with ``(settings, BuildContext)``, returns a :class:`Channel`."""
    secret_variables: tuple[str, ...] = ()
    """Environment variables that hold this channel's secrets (removed from the environment once read)."""
    text_limit: int | None = None
    """The longest text one message holds (as the adapter's ``text_limit``), for workers without the adapter."""
    fetcher: Callable[[], FetcherFactory[S]] | None = None
    """Called with ``(settings)``: a :class:`~bot.media.fetch.MediaFetcher` that downloads what people attach
    (None: the channel has no files); made by ``bot.media`` when the first file comes."""

    doctor: Callable[[], DoctorCheck[S]] | None = None
    """``async (settings) -> list[Finding]``, the platform's answer to the channel's credentials
    (``bot doctor``); None: nothing to ask."""
    setup: Callable[[], ChannelSetup] | None = None
    """Its :class:`~channels.setup.ChannelSetup`, what ``bot init`` asks and writes (its questions are also
    ``bot init``'s options); None: nothing to ask, no secret."""
    library: str | None = None
    """The platform library the adapter loads, as people know it (``bot run`` says while it loads: seconds)."""

    def init(self) -> ChannelSetup:
        return ChannelSetup() if self.setup is None else self.setup()

    def build(self, settings: ChannelSection, context: BuildContext) -> Channel:
        return self.adapter()(self._own(settings), context)

    async def check(self, settings: ChannelSection) -> list[Finding]:
        if self.doctor is None:
            return []
        return await self.doctor()(self._own(settings))

    def load_fetcher(self) -> Callable[[ChannelSection], MediaFetcher] | None:
        """The fetcher's factory, its module imported (a platform library: seconds, so called on a thread);
        None: the channel has no files."""
        if self.fetcher is None:
            return None
        make = self.fetcher()
        return lambda settings: make(self._own(settings))

    def _own(self, settings: ChannelSection) -> S:
        if not isinstance(settings, self.settings):
            raise TypeError(
                f"channel {self.name}: settings are {type(settings).__name__}, not {self.settings.__name__}"
            )
        return settings
