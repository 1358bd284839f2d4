"""Slack files: downloads (``url_private_download`` with the bot token, streamed) and uploads
(``files_upload_v2``: an upload URL, the bytes, then ``files.completeUploadExternal`` into the chat)."""

from __future__ import annotations

from bot.events import OutboundFile
from bot.media.fetch import HttpFetcher
from channels.slack.delivery import WebApi
from channels.slack.settings import SlackSettings


class SlackFetcher(HttpFetcher):
    platform = "Slack"
    hosts = ("slack.com",)

    def refused(self, status: int, content_type: str) -> str | None:
        if status == 200 and content_type == "text/html":  # Slack's sign-in page: the token may not read files
            return "Slack refused the download (does the app have the files:read scope?)"
        return super().refused(status, content_type)


def build_fetcher(settings: SlackSettings) -> SlackFetcher:
    return SlackFetcher(settings.api_base, {"Authorization": f"Bearer {settings.bot_token}"})


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
