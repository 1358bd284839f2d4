"""Media in the gateway: the downloaders of the enabled channels, the intake, the sweeper, and ``send_file``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from agents.models.base import Model
from agents.tools.base import Tool, ToolContext, ToolError, tool
from agents.tools.files import Workspace, open_regular
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.media import MediaSection
from bot.config.settings import ChannelSection
from bot.delivery import Delivery
from bot.events import ChatKey, OutboundFile, OutboundMessage
from bot.ids import new_id
from bot.media.fetch import FetcherLoader, MediaFetcher
from bot.media.intake import MediaIntake, model_transcriber, sweep
from bot.media.sniff import HEAD_BYTES, sniff

log = logging.getLogger(__name__)

SEND_MAX_BYTES = 50 * 1024 * 1024
"""The largest file ``send_file`` sends (Telegram's upload limit for bots)."""
PHOTO_MAX_BYTES = 10 * 1024 * 1024
SWEEP_EVERY_S = 3600.0
SEND_FILE = "send_file"
TOOL_NAMES = (SEND_FILE,)
"""The gateway tools this module makes (:func:`bot.runs.tool_names.known_tool_names` reads them)."""


class Fetchers:
    """Each enabled channel's downloader, made when the first file from it comes: a platform library (aiogram
    takes seconds to import) loads only in a process that downloads from that platform, and on a thread.

    ``loaders``: each channel's fetcher factory, as the composition root has them from the channel registry
    (one import each, made when called); ``sections``: the sections of the channels files may come from."""

    def __init__(self, sections: Mapping[str, ChannelSection], loaders: Mapping[str, FetcherLoader]) -> None:
        self._sections = dict(sections)
        self._loaders = dict(loaders)
        self._made: dict[str, MediaFetcher | None] = {}
        self._making = asyncio.Lock()

    async def get(self, channel: str) -> MediaFetcher | None:
        """The downloader for ``channel`` (None: media off, or the channel has none or cannot make one)."""
        if channel in self._made:
            return self._made[channel]
        async with self._making:
            if channel not in self._made:
                self._made[channel] = await self._build(channel)
        return self._made[channel]

    async def _build(self, channel: str) -> MediaFetcher | None:
        section = self._sections.get(channel)
        load = self._loaders.get(channel)
        if section is None or load is None:
            return None
        try:  # the platform library loads on a thread: seconds of imports
            factory = await asyncio.to_thread(load)
            return None if factory is None else factory(section)
        except Exception as exc:  # a bad token is the adapter's to report; files from it are refused
            log.warning("media: no downloads from %s (%s)", channel, type(exc).__name__)
            return None

    async def close(self) -> None:
        for fetcher in self._made.values():
            if fetcher is not None:
                await fetcher.close()


class MediaService:
    def __init__(
        self,
        media: MediaSection,
        model: Model,
        delivery: Delivery,
        clock: Clock = SYSTEM_CLOCK,
        fetchers: Mapping[str, FetcherLoader] | None = None,
        *,
        channels: Mapping[str, ChannelSection],
        data_dir: Path,
        workspace: Path,
        hidden: Sequence[Path] = (),
    ) -> None:
        """``fetchers``: each channel's fetcher factory, from the channel registry the composition root hands in
        (None: no downloads); ``channels``: the enabled channels' sections; ``data_dir``: ``store.data_dir`` (media
        files go to its ``media`` folder); ``workspace``: ``tools.workspace``, where ``send_file`` takes files
        from, less ``hidden`` (the bot's own files, :func:`bot.config.own.own_paths`)."""
        self.media = media
        self.clock = clock
        self.root = data_dir.expanduser() / "media"
        self.workspace = workspace
        self.hidden = list(hidden)
        self.delivery = delivery
        self.fetchers = Fetchers(channels if media.enabled else {}, fetchers or {})
        transcriber = model_transcriber(model) if model.understands else None
        self.intake = MediaIntake(media, self.root, self.fetchers, transcriber)
        self._sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep_now_and_then(), name="media-sweep")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.fetchers.close()

    async def _sweep_now_and_then(self) -> None:
        while True:
            removed = await asyncio.to_thread(sweep, self.root, self.media.keep_hours)
            if removed:
                log.info("media: deleted %d file(s) older than %g h", removed, self.media.keep_hours)
            await self.clock.sleep(SWEEP_EVERY_S)

    # -- send_file

    def tools(self) -> list[Tool]:
        workspace = Workspace(self.workspace, SEND_MAX_BYTES, self.hidden)

        @tool(risk="medium", name=SEND_FILE)
        async def send_file(ctx: ToolContext, path: str, caption: str = "", as_photo: bool | None = None) -> str:
            """Send a file from the workspace to this chat: an image as a photo (unless as_photo is false),
            anything else as a document, with an optional caption."""
            source = workspace.resolve(path)
            if not source.is_file():
                raise ToolError(f"{path!r} is not a file in the workspace")
            # A copy, made from the file opened and checked (one link, regular, its size): what was approved is
            # what goes out, even if the workspace file changes meanwhile.
            self.root.mkdir(parents=True, exist_ok=True)
            copy = self.root / f"out-{new_id(12)}"
            try:
                size, head = await asyncio.to_thread(_copy_checked, source, copy)
            except ToolError as exc:
                raise ToolError(f"cannot send {path!r}: {exc}") from None
            except OSError as exc:
                raise ToolError(f"cannot send {path!r}: {exc.strerror or exc}") from None
            found = sniff(head)
            photo = found.kind == "image" and size <= PHOTO_MAX_BYTES if as_photo is None else as_photo
            outbound = OutboundFile(path=str(copy.resolve()), name=source.name, kind="photo" if photo else "document")
            message = OutboundMessage(chat=ChatKey.parse(ctx.chat_key), text=caption, file=outbound)
            ref = await self.delivery.send(message)
            if ref is None:
                raise ToolError(f"{source.name} could not be delivered")
            return f"sent {workspace.shown(source)} as a {'photo' if photo else 'document'}"

        return [send_file]


def _copy_checked(source: Path, copy: Path) -> tuple[int, bytes]:
    """Copy ``source`` to ``copy`` from the opened file once it passed the checks (a regular file with one hard
    link, 1 byte to 50 MB); its size and first bytes.  :class:`ToolError` when it may not be sent."""
    with open_regular(source, "sent") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0 or size > SEND_MAX_BYTES:
            raise ToolError(f"it is {size} bytes; files of 1 byte to 50 MB can be sent")
        head = handle.read(HEAD_BYTES)
        handle.seek(0)
        with copy.open("xb") as out:
            while chunk := handle.read(min(1 << 20, SEND_MAX_BYTES + 1 - out.tell())):
                out.write(chunk)
        if copy.stat().st_size > SEND_MAX_BYTES:  # it grew meanwhile
            copy.unlink()
            raise ToolError(f"it grew past {SEND_MAX_BYTES} bytes while it was copied")
    return size, head
