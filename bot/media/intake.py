"""Files that come with a message: downloaded, checked, stored, and turned into what the model and the router see.

Per attachment: the platform's claimed size is checked first (a 50 MB video is refused without a byte
read), then the file streams to ``<data_dir>/media/<name>.part`` with the cap enforced as it grows, its
kind is read from its first bytes (a "photo.jpg" that is a program is refused), and only a complete,
accepted file is renamed to its final name.  A file is named after the event and its place in it, so
handling the same event again (after a crash) writes the same file instead of a second one; files are
deleted ``keep_hours`` after they arrived (:func:`sweep`).  The stored message keeps references
(:class:`~agents.messages.Media`), never bytes.

A voice note is answered like text: the model writes down its words (``media.transcribe: model``), and the
transcript is the message's text, so routing, history and later turns see words.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agents.messages import Media, MediaKind, Message
from agents.models.base import Model
from bot.config.media import MediaSection
from bot.events import Attachment, InboundMessage, event_key
from bot.media.fetch import FetchError, MediaFetcher
from bot.media.sniff import HEAD_BYTES, sniff, text_type

log = logging.getLogger(__name__)

TRANSCRIBE = (
    "Write down the words of this voice note exactly as spoken, in its language, and nothing else. "
    "If there are no words, answer with an empty line."
)
_CLAIMED: dict[str, MediaKind] = {"photo": "image", "image": "image", "voice": "audio", "audio": "audio"}
_NOT_FILES = frozenset({"location", "contact"})
_VIDEOS = frozenset({"video", "video_note", "animation"})


@dataclass(frozen=True)
class Prepared:
    """A message's text and files as the router, the history and the model see them."""

    text: str
    media: tuple[Media, ...] = ()
    refused: tuple[str, ...] = ()
    """The files not taken, each as "name (why)"."""


class Refused(Exception):
    """A file not taken; the message says why (too large, not a kind the model reads)."""


class FetcherSource(Protocol):
    """Where the downloader of a channel comes from (made on first use)."""

    async def get(self, channel: str) -> MediaFetcher | None: ...


class MediaIntake:
    def __init__(
        self,
        settings: MediaSection,
        root: Path,
        fetchers: FetcherSource,
        transcribe: Callable[[Media], Awaitable[str | None]] | None = None,
    ) -> None:
        self.settings = settings
        self.root = root
        self.fetchers = fetchers
        self.transcribe = transcribe

    def wanted(self, event: InboundMessage) -> bool:
        return self.settings.enabled and any(a.kind not in _NOT_FILES and a.ref for a in event.attachments)

    async def prepare(self, event: InboundMessage) -> Prepared:
        """Download and check every file of ``event``; what was taken, what was refused and why."""
        media: list[Media] = []
        refused: list[str] = []
        notes: list[str] = []
        base = hashlib.sha256(event_key(event).encode()).hexdigest()[:24]
        for index, attachment in enumerate(event.attachments):
            if attachment.kind in _NOT_FILES:
                notes.append(f"({attachment.kind}: {attachment.ref})" if attachment.ref else "")
                continue
            label = attachment.name or f"the {attachment.kind}"
            try:
                media.append(await self._take(event.chat.channel, attachment, f"{base}-{index}"))
            except Refused as exc:
                refused.append(f"{label} ({exc})")
            except FetchError as exc:
                log.warning("chat %s: could not download %s: %s", event.chat, label, exc)
                refused.append(f"{label} (I could not download it: {exc})")
            except Exception:  # a full disk, a bug: that file is refused, the message still handled
                log.exception("chat %s: could not take %s", event.chat, label)
                refused.append(f"{label} (it could not be stored)")
        text = event.text.strip()
        for i, item in enumerate(media):
            if item.kind == "audio" and not text:
                words = await self._transcript(item)
                if words:
                    media[i] = item.model_copy(update={"transcript": words})
                    text = words
        text = " ".join(part for part in (text, *notes) if part)
        return Prepared(text=text, media=tuple(media), refused=tuple(refused))

    def refusal(self, refused: tuple[str, ...]) -> str:
        listed = "; ".join(refused)
        return f"I could not take {listed}. I accept {self.settings.accepted()}."

    # -- one file

    async def _take(self, channel: str, attachment: Attachment, name: str) -> Media:
        if attachment.kind in _VIDEOS or (attachment.mime_type or "").startswith("video/"):
            raise Refused("a video, not something I can read")  # known before a byte is read
        claimed = _CLAIMED.get(attachment.kind) or _CLAIMED.get((attachment.mime_type or "").split("/")[0])
        cap = max(self.settings.limit(k) for k in ("image", "audio", "document"))
        if attachment.size and attachment.size > self.settings.limit(claimed or "document"):
            raise Refused(
                f"{_mb(attachment.size)}, more than the {_mb(self.settings.limit(claimed or 'document'))} I take"
            )
        fetcher = await self.fetchers.get(channel)
        if fetcher is None:
            raise FetchError(f"downloads from {channel} are not available")
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / name
        part = self.root / f"{name}.part"
        try:
            size, head = await self._download(fetcher, attachment, part, cap)
            found = sniff(head)
            if found.kind is None:
                raise Refused(f"{found.what}, not something I can read")
            limit = self.settings.limit(found.kind)
            if size > limit:
                raise Refused(f"{_mb(size)}, more than the {_mb(limit)} I take for {found.what}s")
            mime = text_type(attachment.name) if found.mime_type == "text/plain" else found.mime_type
            await asyncio.to_thread(os.replace, part, final)
        finally:
            part.unlink(missing_ok=True)
        return Media(
            id=name, kind=found.kind, mime_type=mime, size=size, path=str(final.resolve()), name=attachment.name
        )

    async def _download(self, fetcher: MediaFetcher, attachment: Attachment, part: Path, cap: int) -> tuple[int, bytes]:
        size = 0
        head = b""
        handle = await asyncio.to_thread(part.open, "wb")
        try:
            async for chunk in fetcher.chunks(attachment):
                size += len(chunk)
                if size > cap:
                    raise Refused(f"more than {_mb(cap)}, the most I take")
                if len(head) < HEAD_BYTES:
                    head += chunk[: HEAD_BYTES - len(head)]
                await asyncio.to_thread(handle.write, chunk)
            await asyncio.to_thread(_sync_close, handle)
        finally:
            handle.close()
        if size == 0:
            raise FetchError("the file was empty")
        return size, head

    async def _transcript(self, media: Media) -> str | None:
        if self.transcribe is None or self.settings.transcribe == "off":
            return None
        try:
            words = await self.transcribe(media)
        except Exception as exc:  # a failed transcription leaves a voice note without words, never a crash
            log.warning("transcribing %s failed: %s", media.id, exc)
            return None
        return (words or "").strip() or None


def model_transcriber(model: Model) -> Callable[[Media], Awaitable[str | None]]:
    """Transcription by the configured model (it hears the audio inline)."""

    async def transcribe(media: Media) -> str | None:
        response = await model.request([Message.user(TRANSCRIBE, media=(media,))], tools=[], system=None)
        return response.text

    return transcribe


def sweep(root: Path, keep_hours: float, now: float | None = None) -> int:
    """Delete stored files (and leftovers of interrupted downloads) older than ``keep_hours``; how many."""
    if not root.is_dir():
        return 0
    cutoff = (now if now is not None else time.time()) - keep_hours * 3600
    removed = 0
    for path in root.iterdir():
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError as exc:
            log.warning("media sweep: %s: %s", path, exc)
    return removed


def _sync_close(handle: object) -> None:
    handle.flush()  # type: ignore[attr-defined]
    os.fsync(handle.fileno())  # type: ignore[attr-defined]
    handle.close()  # type: ignore[attr-defined]


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
