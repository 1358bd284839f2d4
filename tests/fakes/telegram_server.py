"""A fake Telegram Bot API for driving the real aiogram client in tests.

The server listens on a free 127.0.0.1 port and answers ``/bot{token}/{method}``
(multipart, urlencoded or JSON bodies, as aiogram and others send them):
getMe (with ``is_bot``), getUpdates (``offset`` confirms, ``timeout`` long-polls,
409 while a webhook is set), sendMessage, editMessageText, editMessageReplyMarkup,
answerCallbackQuery, sendChatAction, getMyCommands, setMyCommands, deleteWebhook
and setWebhook.  Like Telegram it checks ``parse_mode=HTML`` text (allowed tags,
nesting, escaping, 4,096 UTF-16 units after entity parsing), answers an edit that
changes nothing with "message is not modified", and removes an inline keyboard
when an edit has none.

Every call is recorded (:attr:`FakeTelegram.calls`, failed ones too); a test can
script failures per method (:meth:`FakeTelegram.fail`, e.g. a 429 with
``retry_after``), queue updates built with :meth:`message` and :meth:`press`, and
wait for calls with :meth:`wait_for`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

TOKEN = "123456789:AAH-fake-token-for-tests-0123456789"
JSON_FIELDS = frozenset(
    {"reply_markup", "entities", "caption_entities", "allowed_updates", "commands", "reply_parameters"}
    | {"link_preview_options", "scope"}
)
ALLOWED_TAGS = frozenset(
    {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre"}
    | {"blockquote", "tg-emoji"}
)
_BAD_AMP = re.compile(r"&(?!(?:lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);)")
_BAD_LT = re.compile(r"<(?![a-zA-Z/])")
_MENTION = re.compile(r"@[A-Za-z0-9_]{3,}")
_COMMAND = re.compile(r"^/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?")


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Call:
    """One request as the server saw it (``status`` is what it answered)."""

    method: str
    params: dict[str, Any]
    status: int = 200


@dataclass
class Failure:
    status: int
    description: str
    retry_after: int | None = None


@dataclass
class _Chat:
    id: int
    type: str
    title: str = ""
    is_forum: bool = False

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.type == "private":
            data["first_name"] = "User"
        else:
            data["title"] = self.title or f"Group {self.id}"
        if self.is_forum:
            data["is_forum"] = True
        return data


class TelegramError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status, self.description = status, description


def check_html(text: str) -> str:
    """The visible text of Telegram HTML, or :class:`TelegramError` as Telegram would refuse it."""
    if _BAD_AMP.search(text) or _BAD_LT.search(text):
        raise TelegramError(400, "Bad Request: can't parse entities: unescaped '&' or '<'")
    checker = _HtmlChecker()
    checker.feed(text)
    checker.close()
    if checker.error is None and checker.stack:
        checker.error = f'Can\'t find end tag corresponding to start tag "{checker.stack[-1]}"'
    if checker.error is not None:
        raise TelegramError(400, f"Bad Request: can't parse entities: {checker.error}")
    return "".join(checker.text)


ENTITY_TYPES = frozenset(
    {"mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number", "bold", "italic"}
    | {"underline", "strikethrough", "spoiler", "blockquote", "expandable_blockquote", "code", "pre"}
    | {"text_link", "text_mention", "custom_emoji", "date_time"}
)
_STYLES = frozenset({"bold", "italic", "underline", "strikethrough", "spoiler"})
_QUOTES = frozenset({"blockquote", "expandable_blockquote"})


def check_entities(text: str, entities: list[dict[str, Any]]) -> None:
    """:class:`TelegramError` for entities Telegram would refuse.

    In range and not inside a surrogate pair; entities nest or are apart, never overlap partly; styles (bold,
    italic, underline, strikethrough, spoiler) nest with anything but never inside code or ``pre``; quotes
    never nest in quotes; other entities never contain each other; a ``text_link`` needs an http(s) or tg URL.
    """
    units = text.encode("utf-16-le", "surrogatepass")
    size = len(units) // 2

    def splits_a_pair(at: int) -> bool:
        return 0 < at < size and 0xDC00 <= int.from_bytes(units[2 * at : 2 * at + 2], "little") <= 0xDFFF

    def refuse(why: str) -> TelegramError:
        return TelegramError(400, f"Bad Request: can't parse entities: {why}")

    spans = []
    for e in entities:
        kind, start, length = e.get("type"), int(e.get("offset", -1)), int(e.get("length", 0))
        if kind not in ENTITY_TYPES:
            raise refuse(f"unsupported entity type {kind!r}")
        if start < 0 or length <= 0 or start + length > size:
            raise refuse(f"{kind} entity {start}+{length} outside the text ({size} units)")
        if splits_a_pair(start) or splits_a_pair(start + length):
            raise refuse(f"{kind} entity boundary inside a UTF-16 surrogate pair")
        if kind == "text_link" and not str(e.get("url", "")).lower().startswith(("http://", "https://", "tg://")):
            raise refuse(f"wrong URL {e.get('url')!r} in a text_link")
        spans.append((start, start + length, kind))
    for i, (a1, b1, k1) in enumerate(spans):
        for a2, b2, k2 in spans[i + 1 :]:
            if b1 <= a2 or b2 <= a1:
                continue
            inner_first = a1 >= a2 and b1 <= b2
            if not (inner_first or (a2 >= a1 and b2 <= b1)):
                raise refuse(f"{k1} and {k2} entities overlap partly")
            if (a1, b1) == (a2, b2):  # the same text: either may be the outer one
                orders = [(k1, k2), (k2, k1)]
            else:
                orders = [(k2, k1)] if inner_first else [(k1, k2)]
            problems = [_nesting_problem(outer, inner) for outer, inner in orders]
            if all(problems):
                raise refuse(problems[0] or "")


def _nesting_problem(outer: str, inner: str) -> str | None:
    if outer in _STYLES:  # bold, italic... may hold anything
        return None
    if inner in _STYLES:
        return f"{inner} inside {outer}" if outer in ("code", "pre") else None
    if outer in _QUOTES and inner not in _QUOTES:
        return None
    return f"{inner} entity inside a {outer} entity"


class _HtmlChecker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.error = self.error or f'Unsupported start tag "{tag}"'
        if tag == "a" and not dict(attrs).get("href"):
            self.error = self.error or "Can't find href in <a>"
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.error = self.error or f'Unmatched end tag "{tag}"'
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@dataclass
class FakeTelegram:
    """The fake Bot API server; ``await start()``, then point aiogram at :attr:`base_url`."""

    token: str = TOKEN
    bot_id: int = 4242
    username: str = "test_bot"
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    """Every message the bot sent (as the current JSON, edits applied), by (chat id, message id)."""
    commands: list[dict[str, str]] = field(default_factory=list)
    webhook_url: str = ""
    port: int = 0

    def __post_init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1000)
        self._message_ids = itertools.count(500)
        self._query_ids = itertools.count(1)
        self._failures: dict[str, deque[Failure]] = {}
        self._chats: dict[int, _Chat] = {}
        self._changed = asyncio.Condition()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self.files: dict[str, bytes] = {}
        """Files users sent, by file id (served by getFile and ``/file/bot<token>/<path>``)."""
        self.downloads: list[str] = []
        """File ids downloaded, in order."""

    # -- server ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        self._closing = True
        await self._notify()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        if request.match_info["token"] != self.token:
            return self._record(method, params, 401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        failures = self._failures.get(method)
        if failures:
            failure = failures.popleft()
            body: dict[str, Any] = {"ok": False, "error_code": failure.status, "description": failure.description}
            if failure.retry_after is not None:
                body["parameters"] = {"retry_after": failure.retry_after}
            return self._record(method, params, failure.status, body)
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            body = {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
            return self._record(method, params, 404, body)
        call = Call(method, params)
        self.calls.append(call)
        try:
            result = await handler(params)
        except TelegramError as exc:
            call.status = exc.status
            await self._notify()
            return web.json_response(
                {"ok": False, "error_code": exc.status, "description": exc.description}, status=exc.status
            )
        await self._notify()
        return web.json_response({"ok": True, "result": result})

    def _record(self, method: str, params: dict[str, Any], status: int, body: dict[str, Any]) -> web.Response:
        self.calls.append(Call(method, params, status))
        asyncio.get_running_loop().create_task(self._notify())
        return web.json_response(body, status=status)

    # -- scripting and inspection -----------------------------------------------------------

    def fail(self, method: str, *, status: int = 429, retry_after: int | None = 1, description: str = "") -> None:
        """The next call of ``method`` fails (429 with ``retry_after`` unless told otherwise)."""
        if not description:
            description = f"Too Many Requests: retry after {retry_after}" if status == 429 else "Internal Server Error"
        self._failures.setdefault(method, deque()).append(
            Failure(status, description, retry_after if status == 429 else None)
        )

    def of(self, method: str, *, ok: bool | None = True) -> list[Call]:
        """Calls of ``method`` (only successful ones by default; ``ok=None``: all)."""
        return [c for c in self.calls if c.method == method and (ok is None or (c.status == 200) == ok)]

    @staticmethod
    def marks(params: dict[str, Any]) -> list[tuple[str, str]]:
        """The entities of a sent text as (type, the text each covers), in order."""
        units = str(params.get("text", "")).encode("utf-16-le")
        return [
            (e["type"], units[2 * e["offset"] : 2 * (e["offset"] + e["length"])].decode("utf-16-le"))
            for e in sorted(params.get("entities") or [], key=lambda e: (e["offset"], -e["length"], e["type"]))
        ]

    def sent_texts(self, chat_id: int | None = None) -> list[str]:
        return [
            c.params["text"] for c in self.of("sendMessage") if chat_id is None or int(c.params["chat_id"]) == chat_id
        ]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Wait until ``predicate()`` is truthy (checked after every call) and return its value."""

        async def until() -> Any:
            async with self._changed:
                while not (value := predicate()):
                    await self._changed.wait()
                return value

        return await asyncio.wait_for(until(), timeout)

    # -- updates ------------------------------------------------------------------------------

    def chat(self, chat_id: int, *, type: str | None = None, is_forum: bool = False) -> dict[str, Any]:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = self._chats[chat_id] = _Chat(chat_id, type or ("private" if chat_id > 0 else "supergroup"))
        chat.is_forum = chat.is_forum or is_forum
        return chat.json()

    @staticmethod
    def user(user_id: int, name: str = "Alice") -> dict[str, Any]:
        return {"id": user_id, "is_bot": False, "first_name": name, "username": name.lower()}

    def message(
        self,
        text: str,
        *,
        chat_id: int = 111,
        user_id: int = 111,
        name: str = "Alice",
        thread_id: int | None = None,
        reply_to: tuple[int, int] | None = None,
        caption: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A ``message`` update as Telegram sends it (entities for @mentions and a leading /command)."""
        chat = self.chat(chat_id, is_forum=thread_id is not None)
        msg: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self.user(user_id, name),
        }
        entities = _entities(text)
        if caption:
            msg["caption"] = text
            if entities:
                msg["caption_entities"] = entities
        else:
            msg["text"] = text
            if entities:
                msg["entities"] = entities
        if thread_id is not None:
            msg["message_thread_id"] = thread_id
            msg["is_topic_message"] = True
            # In a topic, a message that replies to nothing "replies" to the topic's first message.
            msg["reply_to_message"] = {
                "message_id": thread_id,
                "date": int(time.time()) - 60,
                "chat": chat,
                "from": self.user(user_id, name),
                "message_thread_id": thread_id,
                "forum_topic_created": {"name": "Topic", "icon_color": 7322096},
                "is_topic_message": True,
            }
        if reply_to is not None:
            msg["reply_to_message"] = self.messages[reply_to]
        msg.update(extra or {})
        return {"message": msg}

    def media(
        self,
        kind: str,
        data: bytes,
        *,
        caption: str = "",
        name: str | None = None,
        mime_type: str | None = None,
        claimed_size: int | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """A ``message`` update with a ``photo``, ``voice``, ``audio``, ``document`` or ``video`` as Telegram
        sends it (``claimed_size``: the size Telegram states, when a test wants it to differ)."""
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        size = claimed_size if claimed_size is not None else len(data)
        item: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size}
        if kind == "photo":
            field_value: Any = [{**item, "file_id": f"{file_id}-thumb", "width": 90, "height": 90}, item]
            item.update(width=1280, height=960)
            self.files[f"{file_id}-thumb"] = data[:64]
        else:
            if kind == "voice":
                item.update(duration=3, mime_type=mime_type or "audio/ogg")
            elif kind in ("video", "animation", "video_note", "audio"):
                item.update(duration=3, **({"width": 640, "height": 480} if kind != "audio" else {}))
                if kind == "video_note":
                    item.pop("width", None)
                    item["length"] = item.pop("height")
            if kind != "voice" and (mime_type or name):
                item.update({k: v for k, v in (("mime_type", mime_type), ("file_name", name)) if v})
            field_value = item
        update = self.message(caption, caption=True, **kw)
        if not caption:
            update["message"].pop("caption", None)
        update["message"][kind] = field_value
        return update

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        file_id = request.match_info["path"].removeprefix("files/")
        if file_id not in self.files:
            return web.Response(status=404)
        self.downloads.append(file_id)
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    async def _api_getFile(self, params: dict[str, Any]) -> Any:
        file_id = str(params.get("file_id", ""))
        if file_id not in self.files:
            raise TelegramError(400, "Bad Request: invalid file_id")
        size = len(self.files[file_id])
        if size > 20 * 1024 * 1024:
            raise TelegramError(400, "Bad Request: file is too big")
        return {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size, "file_path": f"files/{file_id}"}

    async def _api_sendPhoto(self, params: dict[str, Any]) -> Any:
        return self._sent_file("photo", params)

    async def _api_sendDocument(self, params: dict[str, Any]) -> Any:
        return self._sent_file("document", params)

    def _sent_file(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        chat, thread = self._target(params)
        upload = params.get(kind)
        if not isinstance(upload, Upload) or not upload.data:
            raise TelegramError(400, f"Bad Request: there is no {kind} in the request")
        caption = str(params.get("caption") or "")
        if utf16_len(caption) > 1024:
            raise TelegramError(400, "Bad Request: message caption is too long")
        if params.get("caption_entities"):
            check_entities(caption, params["caption_entities"])
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self._me(),
        }
        sent = {
            "file_id": f"sent-{upload.filename}",
            "file_unique_id": f"u-{upload.filename}",
            "file_size": len(upload.data),
        }
        message[kind] = (
            [{**sent, "width": 640, "height": 480}] if kind == "photo" else {**sent, "file_name": upload.filename}
        )
        if caption:
            message["caption"] = caption
        if thread is not None:
            message["message_thread_id"] = thread
        self.messages[(chat["id"], message["message_id"])] = message
        return message

    def press(self, ref: str, data: str, *, user_id: int = 111, name: str = "Alice") -> dict[str, Any]:
        """A ``callback_query`` update: ``user_id`` presses the button ``data`` under message ``ref``."""
        chat_id, _, message_id = ref.rpartition(":")
        message = self.messages[(int(chat_id), int(message_id))]
        return {
            "callback_query": {
                "id": f"cq{next(self._query_ids)}",
                "from": self.user(user_id, name),
                "chat_instance": f"ci{chat_id}",
                "message": message,
                "data": data,
            }
        }

    def push(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue ``update`` for getUpdates (an ``update_id`` is added unless present); returns it."""
        update = {"update_id": next(self._update_ids), **update}
        self._pending.append(update)
        asyncio.get_running_loop().create_task(self._notify())
        return update

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a getUpdates offset."""
        return list(self._pending)

    def buttons(self, ref: str) -> list[list[dict[str, Any]]]:
        chat_id, _, message_id = ref.rpartition(":")
        markup = self.messages[(int(chat_id), int(message_id))].get("reply_markup") or {}
        return list(markup.get("inline_keyboard", []))

    # -- methods ------------------------------------------------------------------------------

    def _me(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": "Test Bot", "username": self.username}

    async def _api_getMe(self, params: dict[str, Any]) -> Any:
        return {**self._me(), "can_join_groups": True, "can_read_all_group_messages": False}

    async def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook_url:
            raise TelegramError(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = int(params.get("offset") or 0)
        if offset:
            self._pending = [u for u in self._pending if u["update_id"] >= offset]
            await self._notify()
        deadline = time.monotonic() + float(params.get("timeout") or 0)
        async with self._changed:
            while not self._pending and not self._closing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    break
        return self._pending[: int(params.get("limit") or 100)]

    def _target(self, params: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        chat_id = int(params["chat_id"])
        thread = params.get("message_thread_id")
        return self.chat(chat_id), int(thread) if thread else None

    def _check_text(self, params: dict[str, Any]) -> None:
        text = params.get("text") or ""
        visible = check_html(text) if params.get("parse_mode") == "HTML" else text
        if params.get("entities"):
            if params.get("parse_mode"):
                raise TelegramError(400, "Bad Request: entities and parse_mode given together")
            check_entities(text, params["entities"])
        if not visible.strip():
            raise TelegramError(400, "Bad Request: message text is empty")
        if utf16_len(visible) > 4096:
            raise TelegramError(400, "Bad Request: message is too long")
        markup = params.get("reply_markup") or {}
        for row in markup.get("inline_keyboard", []):
            for button in row:
                if len(button.get("callback_data", "").encode()) > 64:
                    raise TelegramError(400, "Bad Request: BUTTON_DATA_INVALID")

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        chat, thread = self._target(params)
        self._check_text(params)
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self._me(),
            "text": params["text"],
        }
        if params.get("entities"):
            message["entities"] = params["entities"]
        if thread is not None:
            message["message_thread_id"] = thread
            message["is_topic_message"] = True
        if params.get("reply_markup"):
            message["reply_markup"] = params["reply_markup"]
        self.messages[(chat["id"], message["message_id"])] = message
        return message

    async def _api_sendMessageDraft(self, params: dict[str, Any]) -> Any:
        """Bot API 9.3: a private chat shows the draft while the bot writes; the next message replaces it."""
        chat, _ = self._target(params)
        if chat["type"] != "private":
            raise TelegramError(400, "Bad Request: drafts are only for private chats")
        self._check_text(params)
        if not str(params.get("draft_id", "")).isdigit() or int(params["draft_id"]) == 0:
            raise TelegramError(400, "Bad Request: draft_id must be non-zero")
        return True

    def _existing(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (int(params["chat_id"]), int(params["message_id"]))
        if key not in self.messages:
            raise TelegramError(400, "Bad Request: message to edit not found")
        return self.messages[key]

    async def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        message = self._existing(params)
        self._check_text(params)
        markup = _markup(params.get("reply_markup"))
        same_text = message["text"] == params["text"] and message.get("entities") == params.get("entities")
        if same_text and _markup(message.get("reply_markup")) == markup:
            raise TelegramError(
                400,
                "Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message",
            )
        message["text"] = params["text"]
        message.pop("entities", None)
        if params.get("entities"):
            message["entities"] = params["entities"]
        message["edit_date"] = int(time.time())
        if markup:
            message["reply_markup"] = params["reply_markup"]
        else:
            message.pop("reply_markup", None)
        return message

    async def _api_editMessageReplyMarkup(self, params: dict[str, Any]) -> Any:
        message = self._existing(params)
        markup = _markup(params.get("reply_markup"))
        if _markup(message.get("reply_markup")) == markup:
            raise TelegramError(400, "Bad Request: message is not modified")
        if markup:
            message["reply_markup"] = params["reply_markup"]
        else:
            message.pop("reply_markup", None)
        return message

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        self._target(params)
        return True

    async def _api_getMyCommands(self, params: dict[str, Any]) -> Any:
        return self.commands

    async def _api_setMyCommands(self, params: dict[str, Any]) -> Any:
        self.commands = list(params.get("commands") or [])
        return True

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook_url = ""
        if str(params.get("drop_pending_updates")).lower() == "true":
            self._pending.clear()
        return True

    async def _api_getWebhookInfo(self, params: dict[str, Any]) -> Any:
        info: dict[str, Any] = {"url": self.webhook_url, "has_custom_certificate": False}
        info["pending_update_count"] = len(self._pending)
        return info

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook_url = params.get("url") or ""
        return True


def _markup(markup: dict[str, Any] | None) -> list[Any]:
    return list((markup or {}).get("inline_keyboard") or [])


def _entities(text: str) -> list[dict[str, Any]]:
    """Entities Telegram would attach: a leading /command and @mentions (offsets in UTF-16 units)."""
    found = []
    command = _COMMAND.match(text)
    if command:
        found.append({"type": "bot_command", "offset": 0, "length": utf16_len(command.group())})
    for match in _MENTION.finditer(text):
        if command and match.start() < command.end():
            continue
        offset = utf16_len(text[: match.start()])
        found.append({"type": "mention", "offset": offset, "length": utf16_len(match.group())})
    return found


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        raw: dict[str, Any] = dict(await request.json())
        return raw
    form = await request.post() if request.method == "POST" else request.query
    params: dict[str, Any] = {}
    for key, value in form.items():
        if isinstance(value, web.FileField):  # an uploaded file: its name and bytes
            params[key] = Upload(value.filename, value.content_type, value.file.read())
            continue
        params[key] = json.loads(value) if key in JSON_FIELDS else value
    for key, value in list(params.items()):  # aiogram names a file field and sends it as "attach://<name>"
        if isinstance(value, str) and value.startswith("attach://"):
            params[key] = params.pop(value.removeprefix("attach://"), value)
    return params


@dataclass(frozen=True)
class Upload:
    """A file the bot uploaded (multipart), as the fake received it."""

    filename: str
    content_type: str
    data: bytes
