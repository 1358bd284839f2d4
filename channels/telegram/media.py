"""Telegram files: downloads (``getFile``, then the file URL, streamed) and uploads (``sendPhoto``,
``sendDocument``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.methods import SendDocument, SendPhoto
from aiogram.types import FSInputFile, InlineKeyboardMarkup, Message, ReplyParameters

from bot.events import Attachment, OutboundFile
from bot.media.fetch import CHUNK, FetchError
from channels.formatting import TelegramText, utf16_len
from channels.telegram.delivery import Api, TelegramDeliveryError
from channels.telegram.rendering import entities_of
from channels.telegram.settings import TelegramSettings

CAPTION_LIMIT = 1024
"""UTF-16 units in a photo or document caption."""
DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""The largest file the Bot API lets a bot download."""


class TelegramFetcher:
    """Downloads with its own client (a worker process has no channel connection)."""

    def __init__(self, settings: TelegramSettings) -> None:
        server = TelegramAPIServer.from_base(settings.api_base) if settings.api_base else PRODUCTION
        self.bot = Bot(settings.token, session=AiohttpSession(api=server))

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        if attachment.size and attachment.size > DOWNLOAD_LIMIT:
            raise FetchError("Telegram lets bots download files of up to 20 MB")
        try:
            found = await self.bot.get_file(attachment.ref or "")
        except TelegramAPIError as exc:
            raise FetchError(f"Telegram: {exc.message}") from None
        if not found.file_path:
            raise FetchError("Telegram gave no file path")
        url = self.bot.session.api.file_url(self.bot.token, found.file_path)
        try:
            async for chunk in self.bot.session.stream_content(url, timeout=120, chunk_size=CHUNK):
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise FetchError(f"the download failed ({type(exc).__name__})") from None

    async def close(self) -> None:
        await self.bot.session.close()


def build_fetcher(settings: TelegramSettings) -> TelegramFetcher:
    return TelegramFetcher(settings)


def fits_caption(chunk: TelegramText) -> bool:
    return utf16_len(chunk.text) <= CAPTION_LIMIT


async def send_file(
    api: Api,
    chat_id: int | str,
    thread: int | None,
    file: OutboundFile,
    caption: TelegramText | None,
    markup: InlineKeyboardMarkup | None,
    reply: int | None,
) -> Message:
    """``sendPhoto`` or ``sendDocument`` (streamed from the file); a photo Telegram refuses (too large, odd
    dimensions) goes again as a document."""
    kinds = ["photo", "document"] if file.kind == "photo" else ["document"]
    for kind in kinds:
        upload = FSInputFile(file.path, filename=file.name)
        common: dict[str, Any] = {
            "chat_id": chat_id,
            "message_thread_id": thread,
            "caption": caption.text if caption else None,
            "caption_entities": entities_of(caption) if caption else None,
            "parse_mode": None,
            "reply_markup": markup,
            "reply_parameters": ReplyParameters(message_id=reply, allow_sending_without_reply=True) if reply else None,
        }
        method = SendPhoto(photo=upload, **common) if kind == "photo" else SendDocument(document=upload, **common)
        try:
            return await api.call(method, chat=str(chat_id), paced=True)
        except TelegramBadRequest as exc:
            if kind == "photo":
                continue
            raise TelegramDeliveryError(f"telegram send{kind.title()} to {chat_id}: {exc.message}") from None
        except TelegramAPIError as exc:
            raise TelegramDeliveryError(f"telegram send{kind.title()} to {chat_id}: {exc.message}") from None
    raise TelegramDeliveryError(f"telegram could not send {file.name}")
