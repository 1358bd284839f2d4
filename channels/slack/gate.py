"""Slack HTTP requests checked before anything parses them, and refusals logged sparingly.

:meth:`RequestGate.admit` reads a request in this order and refuses it at the first failure, without a traceback:

1. the body's size: over the shared server's ``client_max_size`` (aiohttp's 1 MiB unless configured, the same limit
   the Telegram webhook has) → 413, before reading it;
2. the signature over the raw bytes, with slack_sdk's ``SignatureVerifier`` semantics: ``X-Slack-Signature`` is
   ``v0=`` + hex HMAC-SHA256(signing secret, ``v0:{X-Slack-Request-Timestamp}:{body}``) and the timestamp is
   within five minutes of the clock's time → otherwise 401 (a missing, empty or non-numeric header included);
3. the body, as Slack sends it: ``application/json`` holding a JSON object, or an
   ``application/x-www-form-urlencoded`` form (a slash command, or an interactive request whose ``payload`` field
   is a JSON object) → otherwise 400.

Only then is the body handed to bolt (whose own signature check is off: this is the one, on the gateway's clock).
An unsigned ``ssl_check=1`` form still goes through: bolt answers it 200 without a signature, as it always did.

A refusal is worth one log line at most: :class:`SparseLog` writes the first of a kind (a reason: a fixed text, so
the kinds are few whatever is sent) and then, at most once per :data:`LOG_WINDOW_S`, how many more there were.
A client that goes away mid-request is such a line at INFO.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.clock import Clock, Timer

log = logging.getLogger(__name__)

SIGNATURE_MAX_AGE_S = 60 * 5
"""slack_sdk's ``SignatureVerifier``: a timestamp further than this from now is refused."""
LOG_WINDOW_S = 60.0
"""At most one log line per kind of refusal in this many seconds (the rest are counted)."""
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


class Refused(Exception):
    """A request that is answered ``status`` and goes no further; ``reason`` is what the log line says."""

    def __init__(self, status: int, reason: str, *, hint: str = "", level: int = logging.WARNING) -> None:
        """``hint``: for the operator, in the log line only."""
        super().__init__(reason)
        self.status, self.reason, self.hint, self.level = status, reason, hint, level

    def response(self) -> web.Response:
        return web.Response(status=self.status, text=self.reason)


class ClientGone(Refused):
    """The client closed the connection before its body was read: nobody hears the answer."""

    def __init__(self) -> None:
        super().__init__(400, "the client went away mid-request", level=logging.INFO)


@dataclass
class _Window:
    until: float
    level: int
    more: str
    count: int = 0
    timer: Timer | None = None


class SparseLog:
    """Log lines by kind, at most one per kind in ``window_s``: the first of a kind as it comes, the rest counted
    and told in one line when the window closes (which opens the next window: a steady flood is one line a window).
    """

    def __init__(self, logger: logging.Logger, clock: Clock, window_s: float = LOG_WINDOW_S) -> None:
        self._log, self._clock, self.window_s = logger, clock, window_s
        self._windows: dict[str, _Window] = {}

    def note(self, kind: str, level: int, line: str, more: str) -> None:
        """``line``: logged if no line of ``kind`` was in this window; ``more``: the count's line, a format with
        ``{n}`` (how many) and ``{window}`` (seconds)."""
        now = self._clock.monotonic()
        window = self._windows.get(kind)
        if window is not None and now >= window.until:  # its timer is due and has not run yet
            self._close(kind, reopen=True)
            window = self._windows.get(kind)
        if window is None:
            self._windows[kind] = _Window(until=now + self.window_s, level=level, more=more)
            self._log.log(level, line)
            return
        window.count += 1
        if window.timer is None:
            window.timer = self._clock.call_later(window.until - now, lambda: self._close(kind, reopen=True))

    def close(self) -> None:
        """Tell the counts not yet told, and cancel the timers."""
        for kind in list(self._windows):
            self._close(kind, reopen=False)

    def _close(self, kind: str, *, reopen: bool) -> None:
        window = self._windows.pop(kind, None)
        if window is None:
            return
        if window.timer is not None:
            window.timer.cancel()
        if window.count:
            self._log.log(window.level, window.more.format(n=window.count, window=f"{self.window_s:g}"))
            if reopen:  # that line was this window's one
                self._windows[kind] = _Window(self._clock.monotonic() + self.window_s, window.level, window.more)


class RequestGate:
    """Admits a Slack HTTP request (see the module docstring) or raises :class:`Refused`, having logged it."""

    def __init__(self, signing_secret: str, clock: Clock, logger: logging.Logger = log) -> None:
        self._secret = signing_secret.encode()
        self._clock = clock
        self.refusals = SparseLog(logger, clock)
        self.refused: Counter[str] = Counter()
        """Requests refused so far, by reason (every one, logged or not)."""

    async def admit(self, request: web.Request) -> AsyncBoltRequest:
        try:
            raw = await _read(request)
            text, content_type = _decoded(raw, request), request.content_type
            try:
                self.verify(request.headers, raw)
            except Refused:
                if text is not None and _is_ssl_check(text, content_type):
                    return _bolt_request(text, request)
                raise
            checked = check_body(text, content_type)
            try:
                return _bolt_request(checked, request)
            except (ValueError, TypeError, AttributeError, LookupError, RecursionError):
                raise Refused(400, "not a request Slack sends") from None
        except Refused as refused:
            self._note(refused, request)
            raise

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """``SignatureVerifier.is_valid`` over the raw bytes, refusing instead of raising on odd headers."""
        stamp = headers.get("X-Slack-Request-Timestamp") or ""
        signature = headers.get("X-Slack-Signature") or ""
        if not stamp or not signature:
            raise Refused(401, "unsigned", hint="no X-Slack-Signature or X-Slack-Request-Timestamp")
        try:
            age = abs(self._clock.time() - int(stamp))
        except (ValueError, OverflowError):
            raise Refused(401, "a request timestamp that is not a number") from None
        if age > SIGNATURE_MAX_AGE_S:
            raise Refused(401, "a stale request timestamp", hint="over 5 minutes off: replayed, or a clock is wrong")
        base = b"v0:" + stamp.encode("utf-8", "surrogateescape") + b":" + body
        expected = b"v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(expected, signature.encode("utf-8", "surrogateescape")):
            raise Refused(401, "an invalid signature", hint="is channels.slack.signing_secret this Slack app's?")

    def close(self) -> None:
        self.refusals.close()

    def _note(self, refused: Refused, request: web.Request) -> None:
        self.refused[refused.reason] += 1
        if isinstance(refused, ClientGone):
            line = f"slack: a client ({request.remote}) went away before its request was read"
            more = "slack: {n} more clients went away mid-request in {window} s"
        else:
            what = f"{refused.status} {refused.reason}" + (f" ({refused.hint})" if refused.hint else "")
            line = f"slack: refused a request from {request.remote}: {what}"
            more = f"slack: refused {{n}} more requests in {{window}} s: {refused.status} {refused.reason}"
        self.refusals.note(refused.reason, refused.level, line, more)


async def _read(request: web.Request) -> bytes:
    limit = request.client_max_size
    if request.content_length is not None and request.content_length > limit:
        raise Refused(413, f"a body over {limit} bytes")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:  # chunked, or longer than it said
        raise Refused(413, f"a body over {limit} bytes") from None
    except ConnectionError:
        raise ClientGone() from None


def _decoded(raw: bytes, request: web.Request) -> str | None:
    """The body as text (its charset, UTF-8 by default), or None when it is not text in it."""
    try:
        return raw.decode(request.charset or "utf-8")
    except (UnicodeDecodeError, LookupError):
        return None


def _bolt_request(text: str, request: web.Request) -> AsyncBoltRequest:
    """What bolt's aiohttp adapter (``to_bolt_request``) makes of a request, from the text already read.

    bolt's ``parse_body`` reads any form with ``payload`` anywhere in it as an interaction and, finding no ``payload``
    field, as nothing (a 404): a slash command whose text says "payload" was lost.  Such a form is handed over with
    that word's ``p`` percent-encoded, which bolt's parsing decodes back (its own signature check is off: the gate's
    is over the bytes Slack signed)."""
    form = request.content_type == FORM and not text.startswith("{")
    if form and "payload" in text and "payload" not in dict(parse_qsl(text, keep_blank_values=True)):
        text = text.replace("payload", "%70ayload")
    return AsyncBoltRequest(body=text, query=request.query_string, headers=request.headers)  # type: ignore[arg-type]


def _is_ssl_check(text: str, content_type: str) -> bool:
    """Slack's certificate check of a slash command URL (``ssl_check=1``), which bolt answers unsigned."""
    if content_type != FORM or text.startswith("{") or "payload" in text:
        return False
    return dict(parse_qsl(text, keep_blank_values=True)).get("ssl_check") == "1"


def check_body(text: str | None, content_type: str) -> str:
    """``text``, or a refusal (400) of what Slack never sends, so that bolt parses only what it can: bolt's own
    parsing (``parse_body``), checked."""
    if content_type not in (JSON, FORM):
        raise Refused(400, "a body neither JSON nor a form", hint=f"{content_type[:100]!r}")
    if text is None:
        raise Refused(400, "a body that is not text in its charset")
    if content_type == JSON or text.startswith("{"):  # bolt's parse_body takes the latter for JSON too
        body = _json(text, "malformed JSON")
    else:
        fields = dict(parse_qsl(text, keep_blank_values=True))
        body = _json(fields["payload"], "a form whose payload is not JSON") if "payload" in fields else fields
    if not isinstance(body, dict):
        raise Refused(400, "JSON that is not an object")
    if not isinstance(body.get("event", {}), dict):
        raise Refused(400, "an event that is not an object")
    return text


def _json(text: str, problem: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise Refused(400, problem) from None
