"""The console's Chat page: each signed-in person chats with the bot in the ``web`` channel (``web:<name>``).

The page is that channel's "platform".  Only a signed-in session reaches it (the sign-in page otherwise; 401 for
its stream, script and posts); every post carries the session's CSRF token.  A message (with at most one file)
is answered ``202`` only after the web adapter committed it to the inbox, like a platform's webhook; a press
goes through the same check as every channel's (a forged or stale payload is refused and changes nothing).
What the bot sends streams to the page as server-sent events, each with the id of the change it carries, so a
page that reconnects gets only what it missed.  A file is streamed to ``<data_dir>/web-uploads/<person>/``
with its size capped as it arrives (and deleted after ``media.keep_hours``, swept at that person's next upload);
files are downloaded only by the person whose chat shows them.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import BodyPartReader, web

from agents.messages import Message
from bot.events import Attachment
from bot.http import HttpServer
from bot.inbox import NotStored, Receipt
from bot.media.intake import sweep
from bot.web.actions import ConsoleActions
from bot.web.auth import Sessions, WebUserSession
from bot.web.data import ConsoleData

log = logging.getLogger(__name__)

Event = tuple[str, str, dict[str, Any]]
TEXT_MAX = 16_000
"""The longest message the page takes (characters)."""
KEEPALIVE_S = 15.0
"""A comment this often keeps proxies from closing the stream; the session is looked at again then too."""
FILE_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


Handler = Callable[[web.Request, WebUserSession], Awaitable[web.StreamResponse]]
Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Console(Protocol):
    """What the page uses of the console it is part of (:class:`bot.web.console.WebConsole`): its sign-in,
    guards, responses and reads."""

    root: str
    data: ConsoleData
    actions: ConsoleActions
    sessions: Sessions
    _closing: asyncio.Event

    def _viewing(self, handler: Handler) -> Route: ...

    def _acting(self, handler: Handler, *, admin: bool = True) -> Route: ...

    async def _session(self, request: web.Request) -> WebUserSession | None: ...

    def _same_origin(self, request: web.Request) -> bool: ...

    async def _page(self, name: str, session: WebUserSession, page: str, **values: Any) -> web.Response: ...

    def _plain(self, status: int, text: str) -> web.StreamResponse: ...

    def _harden(self, response: web.StreamResponse, nonce: str = "") -> web.StreamResponse: ...


class ChatChannel(Protocol):
    """What the page uses of the ``web`` channel's adapter (``channels.web.adapter.WebChatChannel``)."""

    attached: bool

    async def say(self, user: str, text: str, attachments: list[tuple[Attachment, str]]) -> Receipt: ...

    async def press(self, user: str, payload: str, ref: str | None) -> str | None: ...

    def seeded(self, user: str) -> bool: ...

    def seed(self, user: str, history: list[tuple[str, str]]) -> None: ...

    def watch(self, user: str, since: str) -> tuple[bool, list[Event], asyncio.Queue[Event]]: ...

    def unwatch(self, user: str, queue: asyncio.Queue[Event]) -> None: ...

    def file(self, user: str, file_id: str) -> tuple[str, str] | None: ...


@dataclass(frozen=True)
class Talk:
    """What the composition root gives the console for its Chat page."""

    channel: ChatChannel
    uploads: Path
    """``<data_dir>/web-uploads``: one folder per person."""
    max_upload_bytes: int
    keep: int = 200
    """Stored messages shown after a restart."""
    keep_hours: float = 72
    """Uploads older than this are deleted (``media.keep_hours``, as the media intake's own copies)."""


class Refused(Exception):
    """A post the page will not take: its status and what to say."""

    def __init__(self, status: int, said: str) -> None:
        super().__init__(said)
        self.status = status


class ChatPage:
    def __init__(self, console: Console, talk: Talk, script: str) -> None:
        self.console = console
        self.talk = talk
        self.channel = talk.channel
        self.script = script
        self.root = console.root
        talk.channel.attached = True

    def mount(self, http: HttpServer) -> None:
        r, add, c = self.root, http.app.router, self.console
        add.add_get(f"{r}/talk", c._viewing(self._page))
        add.add_get(f"{r}/talk/talk.js", c._viewing(self._script))
        add.add_get(f"{r}/talk/events", c._viewing(self._events))
        add.add_post(f"{r}/talk/send", self._send)
        add.add_post(f"{r}/talk/press", c._acting(self._press, admin=False))
        add.add_get(f"{r}/talk/files/{{id}}", c._viewing(self._file))

    # -- pages -------------------------------------------------------------------------------

    async def _page(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        await self._seed(session.user)
        return await self.console._page("talk.html", session, "talk", title="Chat", chat_key=f"web:{session.user}")

    async def _script(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        return self.console._harden(web.Response(text=self.script, content_type="application/javascript"))

    async def _seed(self, user: str) -> None:
        """The chat's stored history, once per process (what was said before a restart)."""
        if self.channel.seeded(user):
            return
        rows = await self.console.data.store.conversation(f"web:{user}", self.talk.keep)
        history: list[tuple[str, str]] = []
        for _role, _agent, data, _at in rows:
            try:
                message = Message.model_validate_json(data)
            except ValueError:
                continue
            if message.role == "user" and (message.text or message.media):
                history.append(("user", message.text or " ".join(f"📎 {m.name or m.kind}" for m in message.media)))
            elif message.role == "assistant" and message.text and not message.tool_calls:
                history.append(("bot", message.text))
        self.channel.seed(user, history)

    # -- the stream --------------------------------------------------------------------------

    async def _events(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        """What the bot sends to this person's chat, as it comes: ``reset`` (the page starts afresh), ``item``
        (a message, new or changed: keyed by ``ref``), ``gone``, ``typing``, and ``sync`` (caught up)."""
        user = session.user
        await self._seed(user)
        since = request.headers.get("Last-Event-ID") or request.query.get("since", "")
        reset, backlog, queue = self.channel.watch(user, since[:64])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        response.headers["X-Accel-Buffering"] = "no"
        try:
            await response.prepare(request)
            await response.write(b"retry: 1000\n\n")
            if reset:
                await response.write(_event("reset", "", {}))
            for kind, ident, data in backlog:
                await response.write(_event(kind, ident, data))
            while True:
                found = await self._next(queue)
                if found is None:
                    if self.console._closing.is_set() or await self.console.sessions.find(session.token) is None:
                        break  # stopping, or signed out (or expired) meanwhile
                    await response.write(b": still here\n\n")
                    continue
                if found[0] == "end":
                    break
                await response.write(_event(*found))
        except ConnectionResetError:
            pass  # the browser went away
        finally:
            self.channel.unwatch(user, queue)
        return response

    async def _next(self, queue: asyncio.Queue[Event]) -> Event | None:
        """The next change, or None after :data:`KEEPALIVE_S` or when the console closes."""
        if self.console._closing.is_set():
            return None
        getting = asyncio.ensure_future(queue.get())
        closing = asyncio.ensure_future(self.console._closing.wait())
        try:
            done, _ = await asyncio.wait({getting, closing}, timeout=KEEPALIVE_S, return_when="FIRST_COMPLETED")
        finally:
            closing.cancel()
            if not getting.done():
                getting.cancel()
        return getting.result() if getting in done and not getting.cancelled() else None

    # -- what the person does ----------------------------------------------------------------

    async def _send(self, request: web.Request) -> web.StreamResponse:
        """A message, with at most one file: ``multipart/form-data`` with ``csrf`` first, then ``text``, then
        ``file`` (streamed to disk, capped as it arrives)."""
        session = await self.console._session(request)
        if session is None:
            return _json(401, ok=False, error="sign in first")
        stored: Path | None = None
        try:
            text, attachment, stored = await self._read(request, session)
            if not text.strip() and attachment is None:
                raise Refused(422, "Type a message or attach a file.")
            files = [(attachment, str(stored))] if attachment is not None and stored is not None else []
            receipt = await self.channel.say(session.user, text, files)
        except Refused as exc:
            if stored is not None:
                stored.unlink(missing_ok=True)
            return _json(exc.status, ok=False, error=str(exc))
        except NotStored:
            if stored is not None:
                stored.unlink(missing_ok=True)
            return _json(503, ok=False, error="Not sent: the bot could not store it just now. Send it again.")
        return _json(202, ok=True, receipt=str(receipt))

    async def _read(self, request: web.Request, session: WebUserSession) -> tuple[str, Attachment | None, Path | None]:
        if request.content_type == "application/x-www-form-urlencoded":  # text alone
            form = await request.post()
            await self._check_csrf(request, session, str(form.get("csrf", "")))
            return str(form.get("text", ""))[:TEXT_MAX], None, None
        if not request.content_type.startswith("multipart/"):
            raise Refused(415, "send the chat form (multipart/form-data)")
        reader = await request.multipart()
        first = await reader.next()
        csrf = await first.text() if isinstance(first, BodyPartReader) and first.name == "csrf" else ""
        await self._check_csrf(request, session, csrf)
        text, attachment, stored = "", None, None
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise Refused(422, "one file per message")
            if part.name == "text":
                text = (await part.read(decode=True))[: TEXT_MAX * 4].decode("utf-8", "replace")[:TEXT_MAX]
            elif part.name == "file" and part.filename:
                if stored is not None:
                    raise Refused(422, "one file per message")
                attachment, stored = await self._store(session.user, part)
        return text, attachment, stored

    async def _check_csrf(self, request: web.Request, session: WebUserSession, csrf: str) -> None:
        if not self.console._same_origin(request) or not hmac.compare_digest(csrf.encode(), session.csrf.encode()):
            await self.console.actions.audit(session, "web", "web.refused", request.path, "CSRF check failed")
            raise Refused(403, "refused: this form did not come from this console (CSRF check failed)")

    async def _store(self, user: str, part: BodyPartReader) -> tuple[Attachment, Path]:
        """The file streamed to this person's uploads folder, refused past the cap (nothing kept of it then)."""
        folder = self.talk.uploads / _folder(user)
        await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
        await asyncio.to_thread(sweep, folder, self.talk.keep_hours)
        path = folder / secrets.token_urlsafe(18)
        cap, size = self.talk.max_upload_bytes, 0
        handle = await asyncio.to_thread(path.open, "wb")
        try:
            while chunk := await part.read_chunk():
                size += len(chunk)
                if size > cap:
                    raise Refused(413, f"The file is larger than {cap / 1024 / 1024:g} MB, the most the chat takes.")
                await asyncio.to_thread(handle.write, chunk)
        except BaseException:
            handle.close()
            path.unlink(missing_ok=True)
            raise
        handle.close()
        if size == 0:
            path.unlink(missing_ok=True)
            raise Refused(422, "The file is empty.")
        mime = (part.headers.get("Content-Type") or "application/octet-stream").split(";")[0].strip().lower()
        kind = "photo" if mime.startswith("image/") else "audio" if mime.startswith("audio/") else "document"
        name = (part.filename or "file")[:200]
        return Attachment(kind=kind, name=name, mime_type=mime, size=size, ref=path.resolve().as_uri()), path

    async def _press(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        form = await request.post()  # read once by the guard; aiohttp keeps it
        payload, ref = str(form.get("payload", ""))[:200], str(form.get("ref", ""))[:64] or None
        try:
            refusal = await self.channel.press(session.user, payload, ref)
        except NotStored:
            return _json(503, ok=False, error="Not taken: the bot could not store it just now. Press again.")
        if refusal is not None:
            return _json(409, ok=False, error=refusal)
        return _json(202, ok=True)

    async def _file(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        """A file of this person's own chat (one the bot sent, or an upload of theirs); 404 for anyone else's."""
        file_id = request.match_info["id"]
        found = self.channel.file(session.user, file_id)
        if found is None and FILE_ID.match(file_id):  # an upload from before a restart
            kept = self.talk.uploads / _folder(session.user) / file_id
            found = (str(kept), file_id) if await asyncio.to_thread(kept.is_file) else None
        if found is None:
            return self.console._plain(404, "no such file in your chat")
        path, name = Path(found[0]), SAFE_NAME.sub("_", found[1]).strip() or "file"
        if not await asyncio.to_thread(path.is_file):
            return self.console._plain(410, "that file is gone")
        response = web.FileResponse(path)
        response.content_type = "application/octet-stream"  # downloaded, never shown as a page of this site
        response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
        return self.console._harden(response)


def _folder(user: str) -> str:
    """A person's uploads folder: a digest of their name (names may be ``..``)."""
    return hashlib.sha256(user.encode()).hexdigest()[:24]


def _event(kind: str, ident: str, data: dict[str, Any]) -> bytes:
    head = f"event: {kind}\n" + (f"id: {ident}\n" if ident else "")
    return (head + f"data: {json.dumps(data)}\n\n").encode()


def _json(status: int, **values: Any) -> web.Response:
    response = web.json_response(values, status=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
