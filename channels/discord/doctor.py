"""``bot doctor`` for Discord: log in with the token (``GET /users/@me``, as discord.py does at start)."""

from __future__ import annotations

import aiohttp
import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from channels.base import Finding
from channels.discord.calls import endpoints
from channels.discord.settings import DiscordSettings


async def check(cfg: DiscordSettings) -> list[Finding]:
    api, gateway = endpoints(cfg.api_base, cfg.gateway_url)
    Route.BASE = api
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway)
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(cfg.token)
        user = client.user
        return [Finding(True, f"discord token: logged in as {user} (id {user.id if user else '?'})")]
    except discord.LoginFailure:
        return [Finding(False, "discord token: refused (401)", "DISCORD_BOT_TOKEN is wrong: reset it in the portal")]
    except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as exc:
        text = str(exc).replace(cfg.token, "***") if cfg.token else str(exc)
        return [Finding(False, f"discord: cannot log in at {api} ({text})", "check the network or api_base")]
    finally:
        await client.close()
