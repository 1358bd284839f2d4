"""``bot doctor`` for Slack: the bot token (``auth.test``) and, in Socket Mode, the app token
(``apps.connections.open``)."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Finding
from channels.slack.delivery import api_url
from channels.slack.settings import SlackSettings


async def check(cfg: SlackSettings) -> list[Finding]:
    base = api_url(cfg.api_base)
    found: list[Finding] = []
    web = AsyncWebClient(token=cfg.bot_token, base_url=base, timeout=10, retry_handlers=[])
    which, variable = "bot token", "SLACK_BOT_TOKEN"
    try:
        auth = await web.auth_test()
        found.append(
            Finding(True, f"slack bot token: {auth.get('user')} ({auth.get('user_id')}) in {auth.get('team')}")
        )
        if cfg.mode == "socket":
            which, variable = "app token", "SLACK_APP_TOKEN"
            await web.apps_connections_open(app_token=cfg.app_token)
            found.append(Finding(True, "slack app token: Socket Mode connections open"))
        else:
            found.append(Finding(True, f"slack http mode: events at {cfg.events_path} on the http server"))
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else str(exc)
        found.append(
            Finding(False, f"slack {which}: refused ({error})", f"check {variable} in the Slack app's settings")
        )
    except Exception as exc:  # the network: aiohttp's errors, timeouts
        found.append(
            Finding(False, f"slack: cannot reach {base} ({exc.__class__.__name__})", "check the network or api_base")
        )
    return found
