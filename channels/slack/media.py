"""Slack files: downloads (``url_private_download`` with the bot token, streamed) and uploads
(``files_upload_v2``: an upload URL, the bytes, then ``files.completeUploadExternal`` into the chat)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from bot.events import Attachment, OutboundFile
from bot.media.fetch import CHUNK, FetchError, host_allowed
from channels.slack.delivery import WebApi
from channels.slack.settings import SlackSettings

SLACK_HOSTS = ("slack.com",)


class SlackFetcher:
    def __init__(self, settings: SlackSettings) -> None:
        self.token = settings.bot_token
        self.api_base = settings.api_base
        self._session: aiohttp.ClientSession | None = None

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        url = attachment.ref or ""
        if not host_allowed(url, SLACK_HOSTS, self.api_base):
            raise FetchError("the file is not on Slack")  # never send the token anywhere else
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300, sock_read=60))
        try:
            async with self._session.get(url, headers={"Authorization": f"Bearer {self.token}"}) as response:
                if response.status != 200:
                    raise FetchError(f"Slack answered HTTP {response.status}")
                if response.content_type == "text/html":  # Slack's sign-in page: the token may not read files
                    raise FetchError("Slack refused the download (does the app have the files:read scope?)")
                async for chunk in response.content.iter_chunked(CHUNK):
                    yield chunk
        except aiohttp.ClientError as exc:
            raise FetchError(f"the download failed ({type(exc).__name__})") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def build_fetcher(settings: SlackSettings) -> SlackFetcher:
    return SlackFetcher(settings)


async def upload(api: WebApi, channel: str, thread: str | None, file: OutboundFile, comment: str) -> str:
    """The file into the chat (with ``comment``, mrkdwn, above it); the uploaded file's id."""
    done = await api.call(
        "files_upload_v2",
        channel=channel,
        thread_ts=thread,
        file=file.path,
        filename=file.name,
        title=file.name,
        initial_comment=comment or None,
    )
    uploaded = done.get("file") or {}
    return str(uploaded.get("id") or "")
