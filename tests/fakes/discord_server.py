"""A fake of Discord's REST API and gateway for driving the real discord.py in tests.

One aiohttp server on a free 127.0.0.1 port serves both halves:

* the gateway websocket at ``/gateway``: HELLO (op 10), IDENTIFY (op 2) answered with READY and one
  GUILD_CREATE (a guild with two text channels and a thread), heartbeats (op 1) acknowledged (op 11),
  RESUME (op 6) answered with RESUMED; tests then inject ``MESSAGE_CREATE`` (:meth:`FakeDiscord.message`)
  and ``INTERACTION_CREATE`` button presses (:meth:`FakeDiscord.press`) on the newest connection;
* the REST API under ``/api/v10``: the calls discord.py makes for logging in, sending and editing messages,
  typing, interaction callbacks and followups.  Responses carry ``Content-Type: application/json`` exactly
  (discord.py parses nothing else).  Every call is recorded (:attr:`FakeDiscord.calls`); an unknown route is
  answered 404 and listed in :attr:`FakeDiscord.unexpected`.

Messages the bot posts are kept with their components, so a press can carry the message it was made on
(discord.py rebuilds the dynamic button from it), and edits change them.  As Discord does, a message created with
a ``nonce`` and ``enforce_nonce`` is not created again for the same nonce from the same author (the bot, in any
channel) while Discord remembers the nonce (a few minutes; :meth:`FakeDiscord.forget_nonces` is that time
passing): the first message comes back instead; a nonce longer than 25 characters is refused (400).
:meth:`FakeDiscord.hold_creates` holds the answer to a matching message create back (the message exists, the
client hears nothing) until :meth:`FakeDiscord.release`: a process killed meanwhile has sent and not heard.
:meth:`FakeDiscord.rate_limit` makes the next matching REST calls answer 429, with the ``Via`` header discord.py
needs to retry by itself, or without it (what a proxy or Cloudflare sends, which discord.py raises instead).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes import discord_payloads as payloads
from tests.fakes.discord_payloads import (
    ALICE,
    APP_ID,
    BOT_ID,
    BOT_USER,
    CHANNEL_ID,
    DM_CHANNEL_ID,
    GUILD_ID,
    MALLORY,
    NEW_THREAD_ID,
    NONCE_TOO_LONG,
    OTHER_BOT,
    OTHER_CHANNEL_ID,
    THREAD_ID,
)

__all__ = ["ALICE", "BOT_ID", "BOT_USER", "CHANNEL_ID", "DM_CHANNEL_ID", "MALLORY", "NEW_THREAD_ID", "OTHER_BOT"]
__all__ += ["OTHER_CHANNEL_ID", "THREAD_ID", "Call", "FakeDiscord", "buttons"]


@dataclass
class Call:
    """One REST request the client made."""

    method: str
    path: str
    """Below ``/api/v10``, e.g. ``/channels/920000000000000001/messages``."""
    body: Any
    status: int = 200


@dataclass
class _Limit:
    pattern: re.Pattern[str]
    times: int
    via: bool
    retry_after: float


@dataclass
class _Connection:
    ws: web.WebSocketResponse
    seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    identified: bool = False


class FakeDiscord:
    """The fake server; ``await start()``, point discord.py at :attr:`url`, ``await stop()``."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.unexpected: list[str] = []
        self.messages: dict[str, dict[str, Any]] = {}
        """Messages the bot posted (by id), edits applied."""
        self.identifies = 0
        self.intents = 0
        """The intents of the last IDENTIFY."""
        self._ids = itertools.count(int(datetime.now(UTC).timestamp() * 1000 - 1420070400000) << 22)
        self._connections: list[_Connection] = []
        self._limits: list[_Limit] = []
        self._nonces: dict[str, str] = {}
        """Nonces Discord remembers (sent with ``enforce_nonce``): the id of the message each created."""
        self.nonce_hits = 0
        """Message creates answered with an earlier message (a repeated nonce)."""
        self._holds: list[Callable[[dict[str, Any]], bool]] = []
        self.held = asyncio.Event()
        """Set when a message create was held back (:meth:`hold_creates`)."""
        self._released = asyncio.Event()
        self._changed = asyncio.Condition()
        self._interactions: dict[str, dict[str, Any]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.files: dict[str, bytes] = {}
        """Attachments users posted, by attachment id (served at ``/attachments/...`` as the CDN does)."""
        self.downloads: list[str] = []
        self.uploads: list[tuple[str, str, bytes]] = []
        """(channel id, file name, bytes) of every file the bot attached to a message."""

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{channel}/{id}/{name}", self._cdn)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        self.release()
        for conn in self._connections:
            await conn.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    refuse_privileged_intents = False
    """Close IDENTIFY with 4014 when it asks for Message Content (the portal switch is off)."""

    def snowflake(self) -> str:
        return str(next(self._ids))

    # -- gateway ------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        conn = _Connection(ws)
        self._connections.append(conn)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                continue
            frame = json.loads(msg.data)
            op = frame.get("op")
            if op == 1:
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2:
                await self._identify(conn, frame["d"])
            elif op == 6:
                await self._send(conn, "RESUMED", {})
        return ws

    async def _identify(self, conn: _Connection, data: dict[str, Any]) -> None:
        if self.refuse_privileged_intents and data.get("intents", 0) & (1 << 15):
            # As Discord does when the Message Content intent is not enabled for the application.
            await conn.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        ready = {
            "v": 10,
            "user": BOT_USER,
            "guilds": [{"id": GUILD_ID, "unavailable": True}],
            "session_id": f"session-{self.snowflake()}",
            "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
            "application": {"id": APP_ID, "flags": 0},
            "private_channels": [],
            "relationships": [],
        }
        await self._send(conn, "READY", ready)
        await self._send(conn, "GUILD_CREATE", payloads.guild())
        async with self._changed:
            conn.identified = True
            self.identifies += 1
            self.intents = data.get("intents", 0)
            self._changed.notify_all()

    async def _send(self, conn: _Connection, event: str, data: dict[str, Any]) -> None:
        await conn.ws.send_json({"op": 0, "t": event, "s": next(conn.seq), "d": data})

    async def wait_identified(self, count: int = 1, timeout: float = 60) -> None:
        """Until ``count`` IDENTIFYs were answered (READY and GUILD_CREATE sent)."""
        await self.wait_for(lambda: self.identifies >= count, timeout)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a dispatch event on the newest identified, open connection."""
        live = [c for c in self._connections if c.identified and not c.ws.closed]
        assert live, "no client is connected to the fake gateway"
        await self._send(live[-1], event, data)

    # -- injected events ----------------------------------------------------------------

    async def message(
        self,
        content: str,
        *,
        channel_id: str = CHANNEL_ID,
        author: dict[str, Any] = ALICE,
        mentions: tuple[dict[str, Any], ...] = (),
        dm: bool = False,
        reply_to: str | None = None,
        attachments: tuple[dict[str, Any], ...] = (),
    ) -> str:
        """A user's message arriving over the gateway; returns its id."""
        message_id = self.snowflake()
        where = DM_CHANNEL_ID if dm else channel_id
        shown = [user if dm else {**user, "member": payloads.member_of(user)} for user in mentions]
        data = payloads.message_payload(message_id, where, author, content, mentions=shown, attachments=attachments)
        data["type"] = 19 if reply_to else 0
        if reply_to is not None:
            data["message_reference"] = {"message_id": reply_to, "channel_id": data["channel_id"], "type": 0}
            if reply_to in self.messages:
                data["referenced_message"] = self.messages[reply_to]
        if not dm:
            data["member"] = payloads.member_of(author)
        await self.dispatch("MESSAGE_CREATE", data)
        return message_id

    def attachment(self, data: bytes, filename: str, content_type: str, *, size: int | None = None) -> dict[str, Any]:
        """An ``attachments`` entry of a message, its URL on this fake's CDN."""
        attachment_id = self.snowflake()
        self.files[attachment_id] = data
        url = f"{self.url}/attachments/{CHANNEL_ID}/{attachment_id}/{filename}?ex=1&is=1&hm=abc"
        return {
            "id": attachment_id,
            "filename": filename,
            "size": len(data) if size is None else size,
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }

    async def _cdn(self, request: web.Request) -> web.StreamResponse:
        attachment_id = request.match_info["id"]
        self.downloads.append(attachment_id)
        if attachment_id not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[attachment_id], content_type="application/octet-stream")

    async def press(self, custom_id: str, *, message_id: str, user: dict[str, Any] = ALICE) -> str:
        """A button press (``INTERACTION_CREATE`` type 3) on a message the bot posted; returns the interaction id."""
        message = self.messages[message_id]
        channel_id = message["channel_id"]
        interaction_id = self.snowflake()
        data: dict[str, Any] = {
            "id": interaction_id,
            "application_id": APP_ID,
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel_id": channel_id,
            "token": f"token-{interaction_id}",
            "version": 1,
            "message": message,
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "authorizing_integration_owners": {},
            "attachment_size_limit": 8 * 1024 * 1024,
        }
        if channel_id == DM_CHANNEL_ID:
            data["channel"] = {"id": channel_id, "type": 1, "recipients": [user]}
            data["user"] = user
            data["context"] = 1
        else:
            data["guild_id"] = GUILD_ID
            data["guild_locale"] = "en-US"
            thread = channel_id in (THREAD_ID, NEW_THREAD_ID)
            channel = payloads.thread(channel_id) if thread else payloads.text_channel(channel_id, "general", 0)
            data["channel"] = channel
            data["member"] = {**payloads.member(user), "permissions": "1071698660929"}
            data["context"] = 0
        self._interactions[data["token"]] = {"id": interaction_id, "message_id": message_id}
        await self.dispatch("INTERACTION_CREATE", data)
        return interaction_id

    # -- REST ---------------------------------------------------------------------------

    def rate_limit(self, pattern: str, *, times: int = 1, via: bool = True, retry_after: float = 0.05) -> None:
        """The next ``times`` calls whose ``METHOD /path`` matches ``pattern`` answer 429."""
        self._limits.append(_Limit(re.compile(pattern), times, via, retry_after))

    def hold_creates(self, matching: Callable[[dict[str, Any]], bool]) -> None:
        """The next message create whose body ``matching`` accepts is made, and its answer held back until
        :meth:`release` (one create per call)."""
        self._released.clear()
        self._holds.append(matching)

    def release(self) -> None:
        self._released.set()

    def _holding(self, line: str, body: Any) -> bool:
        if not re.fullmatch(r"POST /channels/\d+/messages", line) or not isinstance(body, dict):
            return False
        for matching in self._holds:
            if matching(body):
                self._holds.remove(matching)
                return True
        return False

    def forget_nonces(self) -> None:
        """Discord's memory of nonces has run out (it keeps them a few minutes)."""
        self._nonces.clear()

    def _limited(self, line: str) -> _Limit | None:
        for limit in self._limits:
            if limit.times > 0 and limit.pattern.search(line):
                limit.times -= 1
                return limit
        return None

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        files: list[tuple[str, bytes]] = []
        if request.content_type == "multipart/form-data":  # a message with files: payload_json + files[n]
            form = await request.post()
            payload = form.get("payload_json")
            body: Any = json.loads(payload) if isinstance(payload, str) else {}
            files = [(v.filename, v.file.read()) for k, v in form.items() if isinstance(v, web.FileField)]
        else:
            raw = await request.read()
            body = json.loads(raw) if raw and request.content_type == "application/json" else None
        if files and isinstance(body, dict):
            body["_files"] = files
        line = f"{request.method} {path}"
        limit = self._limited(line)
        if limit is not None:
            await self._record(Call(request.method, path, body, 429))
            headers = {"Retry-After": str(limit.retry_after)}
            if limit.via:
                headers["Via"] = "1.1 google"
            error = {"message": "You are being rate limited.", "retry_after": limit.retry_after, "global": False}
            return _json(error, 429, headers)
        status, result = self._answer(request.method, path, body)
        await self._record(Call(request.method, path, body, status))
        if status == 404:
            self.unexpected.append(line)
        if status == 200 and self._holding(line, body):
            self.held.set()
            await self._released.wait()
        if result is None:
            return web.Response(status=204)
        return _json(result, status)

    def _answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/users/@me":
            return 200, BOT_USER
        if method == "GET" and path == "/oauth2/applications/@me":
            return 200, payloads.application()
        if parts[0] == "channels" and len(parts) >= 2:
            return self._channel_call(method, parts[1], parts[2:], body)
        if parts[0] == "interactions" and method == "POST" and parts[-1] == "callback":
            return 200, {"interaction": {"id": parts[1], "type": 3}}
        if parts[0] == "webhooks" and len(parts) >= 3:
            interaction = self._interactions.get(parts[2])
            if interaction is None:
                return 404, {"message": "Unknown Webhook", "code": 10015}
            if method == "PATCH" and parts[3:] == ["messages", "@original"]:
                return 200, self._edit(interaction["message_id"], body)
            if method == "POST" and len(parts) == 3:
                return 200, self._followup(interaction, body)
        return 404, {"message": "404: Not Found", "code": 0}

    def _channel_call(self, method: str, channel_id: str, rest: list[str], body: Any) -> tuple[int, Any]:
        if method == "GET" and not rest:
            if channel_id in (THREAD_ID, NEW_THREAD_ID):
                return 200, payloads.thread(channel_id)
            return 200, payloads.text_channel(channel_id, "general", 0)
        if method == "POST" and rest == ["typing"]:
            return 204, None
        if method == "POST" and rest == ["messages"]:
            if len(str(body.get("nonce") or "")) > 25:
                return 400, NONCE_TOO_LONG
            return 200, self._create(channel_id, body)
        if method == "PATCH" and len(rest) == 2 and rest[0] == "messages":
            if rest[1] not in self.messages:
                return 404, {"message": "Unknown Message", "code": 10008}
            return 200, self._edit(rest[1], body)
        return 404, {"message": "404: Not Found", "code": 0}

    def _create(self, channel_id: str, body: dict[str, Any]) -> dict[str, Any]:
        nonce = str(body["nonce"]) if body.get("nonce") is not None else None
        if nonce is not None and body.get("enforce_nonce"):
            # As Discord does: a nonce this author used recently creates nothing; the message it made comes back.
            earlier = self._nonces.get(nonce)
            if earlier is not None:
                self.nonce_hits += 1
                return self.messages[earlier]
        message = payloads.message_payload(self.snowflake(), channel_id, BOT_USER, body.get("content") or "")
        message["type"] = 19 if body.get("message_reference") else 0
        message["components"] = body.get("components") or []
        if body.get("nonce"):
            message["nonce"] = body["nonce"]
        for filename, data in body.pop("_files", ()):
            self.uploads.append((channel_id, filename, data))
            message["attachments"].append(
                {
                    "id": self.snowflake(),
                    "filename": filename,
                    "size": len(data),
                    "url": f"{self.url}/x",
                    "proxy_url": f"{self.url}/x",
                }
            )
        if body.get("message_reference"):
            message["message_reference"] = body["message_reference"]
        self.messages[message["id"]] = message
        if nonce is not None and body.get("enforce_nonce"):
            self._nonces[nonce] = message["id"]
        return message

    def _edit(self, message_id: str, body: dict[str, Any]) -> dict[str, Any]:
        message = self.messages[message_id]
        if "content" in body:
            message["content"] = body["content"] or ""
        if "components" in body:
            message["components"] = body["components"] or []
        message["edited_timestamp"] = payloads.now()
        return message

    def _followup(self, interaction: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        channel_id = self.messages[interaction["message_id"]]["channel_id"]
        message = self._create(channel_id, body)
        message.update(flags=body.get("flags", 0), webhook_id=APP_ID)
        return message

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    # -- for assertions -----------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 60) -> None:
        async def until() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)

        await asyncio.wait_for(until(), timeout)

    def called(self, method: str, pattern: str) -> list[Call]:
        """Successful calls whose path matches ``pattern`` (a regular expression)."""
        return [c for c in self.calls if c.method == method and c.status < 400 and re.search(pattern, c.path)]

    def posts(self, channel_id: str | None = None) -> list[Call]:
        """Messages created through ``POST /channels/{id}/messages``."""
        channel = channel_id or r"\d+"
        return self.called("POST", rf"^/channels/{channel}/messages$")

    def texts(self, channel_id: str | None = None) -> list[str]:
        return [str(c.body.get("content") or "") for c in self.posts(channel_id)]

    def message_with_buttons(self) -> dict[str, Any]:
        """The newest posted message that still has components."""
        for message in reversed(list(self.messages.values())):
            if message["components"]:
                return message
        raise AssertionError("no message with buttons was posted")


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons of a message payload, row by row flattened."""
    return [c for row in message.get("components") or [] for c in row.get("components", [])]


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body only when Content-Type is exactly application/json (no charset).
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={**(headers or {}), "Content-Type": "application/json"}
    )
