"""``bot doctor`` for Telegram: the token (``getMe``) and, in webhook mode, what Telegram has registered."""

from __future__ import annotations

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
from aiogram.exceptions import TelegramAPIError, TelegramNetworkError, TelegramUnauthorizedError
from aiogram.utils.token import TokenValidationError

from channels.base import Finding
from channels.telegram.settings import TelegramSettings

TIMEOUT_S = 10


async def check(cfg: TelegramSettings) -> list[Finding]:
    server = TelegramAPIServer.from_base(cfg.api_base) if cfg.api_base else PRODUCTION
    try:
        bot = Bot(cfg.token, session=AiohttpSession(api=server))
    except TokenValidationError:
        return [
            Finding(False, "telegram token: not a bot token", "set TELEGRAM_BOT_TOKEN to 123456:ABC… from @BotFather")
        ]
    found: list[Finding] = []
    try:
        me = await bot.get_me(request_timeout=TIMEOUT_S)
        found.append(Finding(True, f"telegram token: the bot @{me.username} (id {me.id})"))
        if cfg.mode == "webhook":
            found += await _webhook(bot, cfg)
    except TelegramUnauthorizedError:
        found.append(
            Finding(False, "telegram token: refused (401)", "TELEGRAM_BOT_TOKEN is revoked or wrong: ask @BotFather")
        )
    except TelegramNetworkError as exc:
        where = cfg.api_base or "api.telegram.org"
        found.append(
            Finding(False, f"telegram: cannot reach {where} ({_safe(exc, cfg.token)})", "check the network or api_base")
        )
    except TelegramAPIError as exc:
        found.append(Finding(False, f"telegram: {_safe(exc, cfg.token)}", "see the Bot API error above"))
    finally:
        await bot.session.close()
    return found


async def _webhook(bot: Bot, cfg: TelegramSettings) -> list[Finding]:
    url = cfg.webhook.url
    if not url:
        return [Finding(True, "telegram webhook: url unset: registered elsewhere (the bot does not call setWebhook)")]
    if not url.startswith("https://"):
        return [Finding(False, f"telegram webhook: {url} is not HTTPS", "Telegram posts only to https:// URLs")]
    info = await bot.get_webhook_info(request_timeout=TIMEOUT_S)
    out = []
    if info.url and info.url != url:
        out.append(Finding(False, f"telegram webhook: Telegram has {info.url}", "it is replaced at start (setWebhook)"))
    elif info.url:
        out.append(Finding(True, f"telegram webhook: registered, {info.pending_update_count} update(s) waiting"))
    else:
        out.append(Finding(True, f"telegram webhook: {url} is registered when the bot starts"))
    if info.last_error_message:
        out.append(
            Finding(False, f"telegram webhook: Telegram's last delivery failed: {info.last_error_message}",
                    "make the URL reach http.host:http.port (a reverse proxy with TLS)")
        )  # fmt: skip
    return out


def _safe(exc: Exception, token: str) -> str:
    return str(exc).replace(token, "***") if token else str(exc)
