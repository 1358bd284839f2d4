"""A fake of the Slack Web API (and a Socket Mode websocket) for driving the real slack_sdk / slack-bolt.

``/api/{method}`` answers the methods the adapter uses (``auth.test``, ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``reactions.add``/``remove``, ``users.info``,
``conversations.replies``, ``apps.connections.open``) and records every call with its parameters
(query, form and JSON merged) and bearer token.  A method can be scripted to fail first: a 429 with
``Retry-After``, or a Slack error code.  ``/response/{id}`` stands in for ``response_url`` webhooks.
``/socket`` is the Socket Mode websocket that ``apps.connections.open`` hands out: :meth:`FakeSlack.push`
sends an envelope and :meth:`FakeSlack.wait_ack` waits for the client's acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web


@dataclass
class Call:
    """One Web API call as the SDK sent it."""

    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class Failure:
    status: int = 429
    error: str = "ratelimited"
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack:
    """A started fake listens on 127.0.0.1 (a free port); :attr:`base_url` is the SDK's ``base_url``."""

    def __init__(self, *, bot_user_id: str = "UBOT", bot_id: str = "BBOT", team_id: str = "T1") -> None:
        self.bot_user_id, self.bot_id, self.team_id = bot_user_id, bot_id, team_id
        self.calls: list[Call] = []
        self.names: dict[str, str] = {}
        """users.info display names by user id."""
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        """What the bot posted (and how it was edited), by (channel, ts)."""
        self.thread_messages: dict[tuple[str, str], list[dict[str, Any]]] = {}
        """Extra messages conversations.replies returns, by (channel, thread_ts)."""
        self.acks: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, deque[Failure]] = {}
        self._ts = itertools.count(1)
        self._envelopes = itertools.count(1)
        self._changed = asyncio.Condition()
        self._sockets: list[web.WebSocketResponse] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.files: dict[str, bytes] = {}
        """Files users shared, by id (downloaded at ``/files/<id>/<name>`` with the bot token)."""
        self.downloads: list[tuple[str, str | None]] = []
        """(file id, bearer token) of every download."""
        self.uploads: dict[str, dict[str, Any]] = {}
        """Files the bot uploaded, by id: ``filename``, ``data`` and, once completed, ``channel_id``,
        ``thread_ts``, ``initial_comment``."""
        self.bot_token = "xoxb-fake-token"
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_get("/files/{id}/{name}", self._download)
        self.app.router.add_post("/upload/{id}", self._upload)
        self.app.router.add_route("*", "/api/{method}", self._api)
        self.app.router.add_post("/response/{id}", self._response_url)
        self.app.router.add_get("/socket", self._socket)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/response/{name}"

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- scripting and inspection ------------------------------------------------------------

    def fail(
        self, method: str, *, status: int = 429, error: str = "ratelimited", retry_after: float | None = 1
    ) -> None:
        """The next call of ``method`` fails (a 429 with ``Retry-After`` by default)."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None and status == 429 else {}
        self._failures.setdefault(method, deque()).append(Failure(status, error, headers))

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Parameters of every successful chat.postMessage (to ``channel``)."""
        return [
            c.params for c in self.calls_to("chat.postMessage") if channel is None or c.params["channel"] == channel
        ]

    async def wait_for(self, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Wait until ``check()`` is truthy (re-checked on every call) and return its value."""

        async def until() -> Any:
            async with self._changed:
                await self._changed.wait_for(check)
            return check()

        return await asyncio.wait_for(until(), timeout)

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    def file(self, data: bytes, name: str, mimetype: str, *, size: int | None = None) -> dict[str, Any]:
        """A ``files`` entry of a message event, as Slack sends it (``size``: the stated size, if it differs)."""
        file_id = f"F{len(self.files) + 1:04d}"
        self.files[file_id] = data
        url = f"http://127.0.0.1:{self.port}/files/{file_id}/{name}"
        return {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "size": len(data) if size is None else size,
            "url_private": url,
            "url_private_download": url + "?download=1",
        }

    async def _download(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        file_id = request.match_info["id"]
        self.downloads.append((file_id, token))
        if token != self.bot_token:  # as Slack does: the sign-in page, with a 200
            return web.Response(text="<html><body>Sign in to Slack</body></html>", content_type="text/html")
        if file_id not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    async def _upload(self, request: web.Request) -> web.Response:
        upload = self.uploads.get(request.match_info["id"])
        if upload is None:
            return web.Response(status=404)
        upload["data"] = await request.read()
        return web.Response(text="OK - " + str(len(upload["data"])))

    def _files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = f"FU{len(self.uploads) + 1:03d}"
        self.uploads[file_id] = {"filename": params.get("filename"), "length": int(params.get("length") or 0)}
        return {"ok": True, "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}

    def _files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        files = params.get("files")
        files = json.loads(files) if isinstance(files, str) else files or []
        done = []
        for entry in files:
            upload = self.uploads.get(entry["id"])
            if upload is None or "data" not in upload:
                return {"ok": False, "error": "file_not_found"}
            upload.update(
                channel_id=params.get("channel_id"),
                thread_ts=params.get("thread_ts"),
                initial_comment=params.get("initial_comment"),
                title=entry.get("title"),
            )
            done.append({"id": entry["id"], "title": entry.get("title"), "name": upload["filename"]})
        return {"ok": True, "files": done}

    # -- the Web API -------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.pop("token", None)
        failures = self._failures.get(method)
        if failures:
            failure = failures.popleft()
            await self._record(Call(f"{method}!{failure.status}", params, token))
            body = {"ok": False, "error": failure.error}
            return web.json_response(body, status=failure.status, headers=failure.headers)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        result = handler(params) if handler is not None else {"ok": False, "error": "unknown_method"}
        await self._record(Call(method, params, token))
        return web.json_response(result)

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake",
            "user": "bot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _new_ts(self) -> str:
        n = next(self._ts)
        return f"{1700000000 + n}.{n:06d}"

    def _chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        ts = self._new_ts()
        message = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "text": params.get("text", ""),
            "ts": ts,
            **({"blocks": params["blocks"]} if params.get("blocks") else {}),
            **({"thread_ts": params["thread_ts"]} if params.get("thread_ts") else {}),
        }
        self.messages[(params["channel"], ts)] = message
        return {"ok": True, "channel": params["channel"], "ts": ts, "message": message}

    def _chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (params["channel"], params["ts"])
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        self.messages[key].update(text=params.get("text", ""), blocks=params.get("blocks", []))
        return {"ok": True, "channel": key[0], "ts": key[1], "text": params.get("text", "")}

    def _chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "message_ts": self._new_ts()}

    def _reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _reactions_remove(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = params["user"]
        name = self.names.get(user, f"name-{user}")
        return {
            "ok": True,
            "user": {"id": user, "name": name.lower(), "real_name": name, "profile": {"display_name": name}},
        }

    def _conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, thread = params["channel"], params["ts"]
        posted = [m for (c, _), m in self.messages.items() if c == channel and m.get("thread_ts") == thread]
        return {"ok": True, "messages": [*self.thread_messages.get((channel, thread), []), *posted], "has_more": False}

    def _apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    async def _response_url(self, request: web.Request) -> web.Response:
        await self._record(Call(f"response_url:{request.match_info['id']}", await request.json(), None))
        return web.Response(text="ok")

    # -- Socket Mode ---------------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        await self._record(Call("socket:connected", {}, None))
        await ws.send_json({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}})
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    data = json.loads(msg.data)
                    if "envelope_id" in data:
                        self.acks[data["envelope_id"]] = data
                        await self._record(Call("socket:ack", data, None))
        finally:
            self._sockets.remove(ws)
        return ws

    async def push(
        self,
        payload: dict[str, Any],
        *,
        type: str = "events_api",
        retry_attempt: int = 0,
        envelope_id: str | None = None,
    ) -> str:
        """Send one Socket Mode envelope to the connected client; returns its envelope id.

        ``envelope_id``: a redelivery of an envelope that was not acknowledged keeps its id (a new one otherwise).
        """
        await self.wait_for(lambda: self._sockets)
        envelope_id = envelope_id or f"env-{next(self._envelopes)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": type,
            "payload": payload,
            "accepts_response_payload": type != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        await self._sockets[-1].send_json(envelope)
        return envelope_id

    async def wait_ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any]:
        ack: dict[str, Any] = await self.wait_for(lambda: self.acks.get(envelope_id), timeout)
        return ack
