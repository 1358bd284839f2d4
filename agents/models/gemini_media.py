"""The files of a conversation as Gemini parts: inline data up to a size, the Files API above it.

Bytes are read from the stored file when a request is built (history keeps only references).  A file
deleted after its keep time becomes a line of text saying so; a voice note with a transcript is not sent
again (its words are the message's text).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.genai import types

from agents.messages import Media, Message

log = logging.getLogger(__name__)

INLINE_MAX_BYTES = 14 * 1024 * 1024
"""Gemini takes about 20 MB per request, base64 (4/3 larger) included."""


async def media_parts(
    client: Any, messages: Sequence[Message], inline_max: int = INLINE_MAX_BYTES
) -> dict[str, types.Part]:
    """A part for every file in ``messages`` (by media id), read (or uploaded) off the event loop."""
    wanted = [m for message in messages for m in message.media if not (m.kind == "audio" and m.transcript)]
    parts: dict[str, types.Part] = {}
    budget = inline_max
    for media in reversed(wanted):  # the newest first: when the budget runs out, older files are uploaded
        path = Path(media.path)
        if not await asyncio.to_thread(path.is_file):
            parts[media.id] = types.Part(text=media.gone())
            continue
        if media.size <= budget:
            data = await asyncio.to_thread(path.read_bytes)
            budget -= len(data)
            parts[media.id] = types.Part(inline_data=types.Blob(mime_type=media.mime_type, data=data))
            continue
        parts[media.id] = await _uploaded(client, media, path)
    return parts


async def _uploaded(client: Any, media: Media, path: Path) -> types.Part:
    try:
        uploaded = await client.aio.files.upload(
            file=str(path), config=types.UploadFileConfig(mime_type=media.mime_type, display_name=media.name or None)
        )
    except Exception as exc:
        log.warning("gemini: uploading %s failed: %s", media.id, exc)
        return types.Part(text=f"({media.label()}: too large to pass to the model just now)")
    return types.Part(file_data=types.FileData(file_uri=uploaded.uri, mime_type=media.mime_type))


def with_media(message: Message, parts: dict[str, types.Part]) -> list[types.Part]:
    """A user message's parts: its files (in order), then its text."""
    out = [parts[m.id] for m in message.media if m.id in parts]
    if message.text:
        out.append(types.Part(text=message.text))
    return out
