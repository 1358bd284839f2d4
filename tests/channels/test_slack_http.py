"""Slack HTTP mode refuses what Slack never sends, signature first: 401 / 400 / 413 with one log line each and no
traceback, log lines about refusals sparse (one per kind per window, with a count, on the channel's FakeClock), a
client that goes away mid-request one INFO line.  Real gateway, real aiohttp clients on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.clock import FakeClock
from channels.slack.gate import LOG_WINDOW_S, SIGNATURE_MAX_AGE_S, ClientGone
from tests.fakes.slack_server import FakeSlack
from tests.helpers import slack
from tests.helpers.slack import SECRET, sign
from tests.waiting import eventually

fake, make_slack = slack.fake, slack.make_slack
"""Fixtures of tests/helpers/slack.py, used by name below."""

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
LIMIT = 1024**2
"""The shared server's ``client_max_size`` (aiohttp's default): the Telegram webhook has the same."""
GONE = ClientGone().reason
EVENT = json.dumps(
    {"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention", "text": "my private words"}}
)

NOT_SLACK = {
    "malformed JSON": ('{"type": "event_callback", "event": ', JSON),
    "not JSON at all": ("hello there", JSON),
    "an empty JSON body": ("", JSON),
    "a JSON array": ('[{"type": "event_callback"}]', JSON),
    "a JSON string": ('"event_callback"', JSON),
    "an event that is an array": ('{"type": "event_callback", "event": []}', JSON),
    "a form payload that is not JSON": (urlencode({"payload": "{not json"}), FORM),
    "a form payload that is a JSON array": (urlencode({"payload": "[1, 2]"}), FORM),
    "a form that starts like JSON": ("{payload=1", FORM),
    "plain text": ("hello", "text/plain"),
    "no content type": (EVENT, ""),
    "a body bolt cannot take": ('{"type": "event_callback", "team": 5}', JSON),
}


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    assert all(r.exc_info is None for r in caplog.records) and "Traceback" not in caplog.text
    return [r.getMessage() for r in caplog.records]


def fresh(clock: FakeClock, body: str, **kwargs: Any) -> dict[str, str]:
    """Signed now on the channel's clock."""
    return sign(body, ts=int(clock.time()), **kwargs)


def fresh_bytes(clock: FakeClock, body: bytes) -> dict[str, str]:
    stamp = str(int(clock.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


async def post(h: Any, body: str | bytes, content_type: str, headers: dict[str, str]) -> int:
    data = body.encode() if isinstance(body, str) else body
    ct = {"Content-Type": content_type} if content_type else {}
    async with h.http.post(h.url, data=data, headers={**ct, **headers}, skip_auto_headers=["Content-Type"]) as r:
        return int(r.status)


async def raw(h: Any, head: str, chunks: Sequence[bytes] = (), *, close: bool = False) -> bytes:
    """A request written on a socket (a body that is larger, or shorter, than it says); the answer, unless closed."""
    assert h.gateway.http is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", h.gateway.http.port)
    try:
        writer.write(f"POST {h.settings.channels.slack.events_path} HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
        if close:
            return b""
        return await reader.read(1024)
    finally:
        writer.close()


async def test_a_body_slack_never_sends_is_refused_400_with_one_line_and_no_traceback(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack(clock=clock)
    for kind, (body, content_type) in NOT_SLACK.items():
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            caplog.clear()  # only what follows (another test may have left logging at INFO)
            assert await post(h, body, content_type, fresh(clock, body)) == 400, kind
        [line] = lines(caplog)
        assert line.startswith("slack: refused a request from 127.0.0.1: 400 "), kind
        await clock.advance(LOG_WINDOW_S)  # each kind on its own, whatever its reason
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        caplog.clear()  # only what follows (another test may have left logging at INFO)
        latin = '{"text": "caf\xe9"}'.encode("latin-1")
        assert await post(h, latin, JSON, fresh_bytes(clock, latin)) == 400, "not UTF-8"
        assert lines(caplog) == ["slack: refused a request from 127.0.0.1: 400 a body that is not text in its charset"]
    await h.settle()
    assert [c.method for c in fake.calls] == ["auth.test"], "nothing refused reached the gateway"


async def test_the_signature_is_checked_before_the_body_and_every_bad_one_is_401_with_one_line(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack(clock=clock)
    unsigned: dict[str, Callable[[int], dict[str, str]]] = {
        "no headers": lambda now: {},
        "empty headers": lambda now: {"X-Slack-Signature": "", "X-Slack-Request-Timestamp": ""},
        "an empty signature": lambda now: {"X-Slack-Signature": "", "X-Slack-Request-Timestamp": str(now)},
        "an empty timestamp": lambda now: {"X-Slack-Signature": "v0=00", "X-Slack-Request-Timestamp": ""},
        "a timestamp that is no number": lambda now: {**sign(EVENT, ts=now), "X-Slack-Request-Timestamp": "today"},
        "an absurd timestamp": lambda now: {**sign(EVENT, ts=now), "X-Slack-Request-Timestamp": "9" * 400},
        "a wrong secret": lambda now: sign(EVENT, ts=now, secret="wrong"),
        "a signature not in hex": lambda now: {**sign(EVENT, ts=now), "X-Slack-Signature": "v0=\u00e9\u00e9"},
        "a signature over another body": lambda now: sign(EVENT + " ", ts=now),
        "a stale timestamp": lambda now: sign(EVENT, ts=now - SIGNATURE_MAX_AGE_S - 1),
        "a timestamp from the future": lambda now: sign(EVENT, ts=now + SIGNATURE_MAX_AGE_S + 1),
    }
    seen = []
    for kind, headers in unsigned.items():
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            caplog.clear()  # only what follows (another test may have left logging at INFO)
            assert await post(h, EVENT, JSON, headers(int(clock.time()))) == 401, kind
        [line] = lines(caplog)
        assert line.startswith("slack: refused a request from 127.0.0.1: 401 "), kind
        seen.append(line)
        await clock.advance(LOG_WINDOW_S)
    assert not [line for line in seen if "private" in line], "a forged request's text stays out of the log"
    for kind, (body, content_type) in NOT_SLACK.items():
        assert await post(h, body, content_type, fresh(clock, body, secret="wrong")) == 401, f"{kind}, forged"
        assert await post(h, body, content_type, {}) == 401, f"{kind}, unsigned"
    # The timestamp is checked against the channel's clock: signed now, still good 5 minutes later, not after.
    body = json.dumps({"token": "legacy", "challenge": "c-1", "type": "url_verification"})
    signed = fresh(clock, body)
    await clock.advance(SIGNATURE_MAX_AGE_S - 1)
    assert await post(h, body, JSON, signed) == 200
    await clock.advance(2)
    assert await post(h, body, JSON, signed) == 401
    await h.settle()
    assert [c.method for c in fake.calls] == ["auth.test"]


async def test_a_body_over_the_limit_is_refused_413_before_it_is_read(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack(clock=clock)
    with caplog.at_level(logging.DEBUG):
        caplog.clear()  # only what follows (another test may have left logging at INFO)
        said = await raw(h, f"Content-Type: {JSON}\r\nContent-Length: {LIMIT + 1}\r\n")
        assert said.startswith(b"HTTP/1.1 413 "), "refused on its stated length, nothing of it sent"
        [line] = lines(caplog)
        assert line == f"slack: refused a request from 127.0.0.1: 413 a body over {LIMIT} bytes"
        await clock.advance(LOG_WINDOW_S)
        caplog.clear()
        chunk = b"x" * 65536
        chunked = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (LIMIT // len(chunk) + 1) + [b"0\r\n\r\n"]
        said = await raw(h, f"Content-Type: {JSON}\r\nTransfer-Encoding: chunked\r\n", chunked)
        assert said.startswith(b"HTTP/1.1 413 "), "refused as it grew past the limit"
        assert len(lines(caplog)) == 1
    body = json.dumps({"type": "url_verification", "challenge": "c" * (LIMIT - 100)})
    assert len(body) < LIMIT and await post(h, body, JSON, fresh(clock, body)) == 200, "just under it: fine"


async def test_refusals_are_logged_once_per_kind_per_window_with_the_count_of_the_rest(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack(clock=clock)
    forged = fresh(clock, EVENT, secret="wrong")
    with caplog.at_level(logging.INFO):
        caplog.clear()  # only what follows (another test may have left logging at INFO)
        for _ in range(30):
            assert await post(h, EVENT, JSON, forged) == 401
        assert await post(h, "[]", JSON, fresh(clock, "[]")) == 400
        assert await post(h, "[]", JSON, fresh(clock, "[]")) == 400
        for i in range(5):  # what a sender chooses (here the content type) makes no new kind
            assert await post(h, EVENT, f"text/x-{i}", fresh(clock, EVENT)) == 400
        first = lines(caplog)
        assert len(first) == 3, "one line per kind"
        assert "401 an invalid signature" in first[0] and "400 JSON that is not an object" in first[1]
        assert first[2].endswith("400 a body neither JSON nor a form ('text/x-0')")
        caplog.clear()
        await clock.advance(LOG_WINDOW_S - 1)
        assert lines(caplog) == [], "nothing more within the window"
        await clock.advance(1)
        told = lines(caplog)
        assert len(told) == 3 and set(told) == {
            "slack: refused 1 more requests in 60 s: 400 JSON that is not an object",
            "slack: refused 29 more requests in 60 s: 401 an invalid signature",
            "slack: refused 4 more requests in 60 s: 400 a body neither JSON nor a form",
        }
        caplog.clear()
        for _ in range(3):  # a flood that goes on: that count was this window's line
            assert await post(h, EVENT, JSON, forged) == 401
        assert lines(caplog) == []
        await clock.advance(LOG_WINDOW_S)
        assert len(lines(caplog)) == 1 and "refused 3 more requests" in caplog.text
        caplog.clear()
        await clock.advance(LOG_WINDOW_S)
        assert lines(caplog) == [], "a quiet window: nothing to tell"
        assert await post(h, EVENT, JSON, forged) == 401
        assert await post(h, EVENT, JSON, forged) == 401
        assert len(lines(caplog)) == 1 and "refused a request from" in caplog.text, "after quiet, the first again"
        caplog.clear()
        await h.stop()
        assert [line for line in lines(caplog) if "refused" in line] == [
            "slack: refused 1 more requests in 60 s: 401 an invalid signature"
        ], "stopping tells the count not yet told"


async def test_a_client_that_goes_away_mid_request_is_one_info_line_and_the_rest_goes_on(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack("Still here.", clock=clock)
    with caplog.at_level(logging.DEBUG):
        caplog.clear()  # only what follows (another test may have left logging at INFO)
        for _ in range(3):
            await raw(h, f"Content-Type: {JSON}\r\nContent-Length: 1000\r\n", [b'{"type": '], close=True)
        await eventually(lambda: h.channel.gate.refused[GONE] == 3, what="the server to see the three go")
        await h.mention("hello?")
        await h.settle()
        await clock.advance(LOG_WINDOW_S)
        gone = [r for r in caplog.records if "went away" in r.getMessage()]
        assert all(r.levelno == logging.INFO and r.exc_info is None for r in gone)
        assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert [r.getMessage() for r in gone] == [
            "slack: a client (127.0.0.1) went away before its request was read",
            "slack: 2 more clients went away mid-request in 60 s",
        ]
    assert [p["text"] for p in fake.posts()] == ["Still here."]


async def test_what_slack_sends_is_taken_as_before(
    make_slack: Any, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    h = await make_slack("Answered.", clock=clock)
    with caplog.at_level(logging.WARNING):
        caplog.clear()  # only what follows (another test may have left logging at INFO)
        body = json.dumps({"token": "legacy", "challenge": "c-2", "type": "url_verification"})
        async with h.http.post(
            h.url, data=body.encode(), headers={"Content-Type": f"{JSON}; charset=utf-8", **fresh(clock, body)}
        ) as response:
            assert response.status == 200 and "c-2" in await response.text()
        # Slack's certificate check of a slash command URL: bolt answers it unsigned, as it always did.
        assert await post(h, urlencode({"ssl_check": "1", "token": "legacy"}), FORM, {}) == 200
        await h.mention("hi")
        await h.settle()
    assert [p["text"] for p in fake.posts()] == ["Answered."]
    assert lines(caplog) == []
