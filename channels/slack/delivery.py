"""Calling the Slack Web API without losing messages: pacing, 429 ``Retry-After``, bounded retries; Block Kit.

Slack allows about one message a second per channel, with short bursts tolerated
(https://docs.slack.dev/apis/web-api/rate-limits).  :class:`Pacer` keeps under it; a 429 anyway
means waiting ``Retry-After`` and calling again, up to a bound.  Network and server errors are
retried a few times, then the call fails with :class:`SlackDeliveryError` (the gateway reports it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.clock import SYSTEM_CLOCK, Clock
from bot.events import Button
from bot.limits import TokenBuckets
from bot.retry import retry
from channels.formatting import split_markdown, to_slack_mrkdwn

log = logging.getLogger(__name__)

TEXT_LIMIT = 3000
"""A section block's text limit; plain messages are split at the same size so every part reads alike."""
LABEL_LIMIT = 75
BUTTONS_PER_BLOCK = 25
ACTION_ID_PREFIX = "bot-choice-"
MAX_RATE_LIMIT_WAIT_S = 600.0
"""Longest total wait for rate limits on one call; past it the call fails (and the gateway reports it)."""
MAX_RATE_LIMIT_RETRIES = 10
NETWORK_ATTEMPTS = 4
NETWORK_BACKOFF_S = (0.5, 1.0, 2.0)
_TRANSIENT = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})


class SlackDeliveryError(RuntimeError):
    """A Web API call failed for good.  The text never contains a token."""

    def __init__(self, method: str, reason: str, error: str | None = None) -> None:
        super().__init__(f"Slack {method} failed: {reason}")
        self.method = method
        self.error = error
        """Slack's error code (``not_in_channel``, ``invalid_auth``, …) when it sent one."""


def api_url(api_base: str | None) -> str:
    """The SDK's ``base_url``: Slack's Web API unless ``api_base`` points elsewhere (tests, proxies)."""
    base = api_base or AsyncWebClient.BASE_URL
    return base if base.endswith("/") else base + "/"


def retry_after(headers: Mapping[str, Any] | None) -> float:
    value = None
    if headers:
        value = headers.get("Retry-After") or headers.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


class Pacer:
    """Token buckets per channel (:class:`~bot.limits.TokenBuckets`): ``burst`` messages at once, then ``rate``
    a second."""

    def __init__(
        self,
        rate: float = 1.0,
        burst: float = 3.0,
        max_channels: int = 10_000,
        clock: Callable[[], float] = SYSTEM_CLOCK.monotonic,
        sleep: Callable[[float], Awaitable[None]] = SYSTEM_CLOCK.sleep,
    ) -> None:
        """``clock`` (monotonic seconds) and ``sleep``: a :class:`~bot.clock.Clock`'s (:meth:`on`)."""
        self.buckets = TokenBuckets(rate, burst, max_keys=max_channels, clock=clock)
        self.sleep = sleep

    @classmethod
    def on(cls, clock: Clock) -> Pacer:
        """Slack's pace, on ``clock``."""
        return cls(clock=clock.monotonic, sleep=clock.sleep)

    def reserve(self, channel: str) -> float:
        """Take a token now (possibly going into debt) and return how long to wait before using it."""
        return self.buckets.reserve(channel)

    async def wait(self, channel: str) -> None:
        delay = self.reserve(channel)
        if delay > 0:
            await self.sleep(delay)


class WebApi:
    """Web API calls by method name (``chat.postMessage``) through one :class:`AsyncWebClient`."""

    def __init__(
        self,
        client: AsyncWebClient,
        pacer: Pacer | None = None,
        on_rate_limit: Callable[[], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``clock``: what the pace (unless ``pacer`` is given) and the retries wait on."""
        self.client = client
        self.clock = clock
        self.pacer = pacer or Pacer.on(clock)
        self._on_rate_limit = on_rate_limit

    async def post(self, **kwargs: Any) -> AsyncSlackResponse:
        """``chat.postMessage``, paced per channel."""
        await self.pacer.wait(kwargs["channel"])
        return await self.call("chat.postMessage", **kwargs)

    async def call(self, method: str, **kwargs: Any) -> AsyncSlackResponse:
        """Call until it succeeds: 429s wait ``Retry-After``; network and server errors retry a few times."""
        waited, limited, failures = 0.0, 0, 0

        def delay_after(exc: Exception, _attempt: int) -> float | None:
            nonlocal waited, limited, failures
            if isinstance(exc, SlackApiError):
                status, error = _status_and_error(exc)
                if status == 429 or error == "ratelimited":  # Slack's Retry-After: not a failed try
                    if self._on_rate_limit is not None:
                        self._on_rate_limit()
                    delay = retry_after(exc.response.headers)
                    if limited >= MAX_RATE_LIMIT_RETRIES or waited + delay > MAX_RATE_LIMIT_WAIT_S:
                        raise SlackDeliveryError(method, f"still rate limited after {waited:.0f}s", error) from None
                    limited += 1
                    waited += delay
                    log.info("slack %s: rate limited, retrying in %.1fs", method, delay)
                    return delay
                if status < 500 and error not in _TRANSIENT:
                    raise SlackDeliveryError(method, error or f"HTTP {status}", error) from None
                failures += 1
                if failures >= NETWORK_ATTEMPTS:
                    raise SlackDeliveryError(method, error or f"HTTP {status}", error) from None
            elif isinstance(exc, aiohttp.ClientError | TimeoutError | OSError):
                failures += 1
                if failures >= NETWORK_ATTEMPTS:
                    raise SlackDeliveryError(method, f"network error ({type(exc).__name__})") from exc
            else:
                return None  # not Slack's answer nor the network's: the caller's
            delay = NETWORK_BACKOFF_S[min(failures, len(NETWORK_BACKOFF_S)) - 1]
            log.info("slack %s: attempt %d failed, retrying in %.1fs", method, failures, delay)
            return delay

        return await retry(lambda: self._invoke(method, kwargs), delay_after, clock=self.clock)

    async def call_once(self, method: str, **kwargs: Any) -> AsyncSlackResponse:
        """One attempt, for best-effort calls (reactions, names, look-ups)."""
        try:
            return await self._invoke(method, kwargs)
        except SlackApiError as exc:
            status, error = _status_and_error(exc)
            raise SlackDeliveryError(method, error or f"HTTP {status}", error) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise SlackDeliveryError(method, f"network error ({type(exc).__name__})") from exc

    async def _invoke(self, method: str, kwargs: dict[str, Any]) -> AsyncSlackResponse:
        response: AsyncSlackResponse = await getattr(self.client, method.replace(".", "_"))(**kwargs)
        return response


def _status_and_error(exc: SlackApiError) -> tuple[int, str | None]:
    response = exc.response
    data = response.data if isinstance(response.data, dict) else {}
    return int(response.status_code), data.get("error")


def render(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """The markdown subset as mrkdwn parts of at most ``limit`` characters (none for blank text)."""
    if not text.strip():
        return []
    return split_markdown(to_slack_mrkdwn(text), limit)


def blocks(mrkdwn: str, rows: Sequence[Sequence[Button]]) -> list[dict[str, Any]]:
    """A section with the text, then one actions block per row of buttons (payload in ``value``).

    ``action_id`` must be unique within a message: buttons are numbered across rows.
    """
    out: list[dict[str, Any]] = []
    if mrkdwn.strip():
        out.append({"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}})
    n = 0
    for row in rows:
        for start in range(0, len(row), BUTTONS_PER_BLOCK):
            elements = []
            for button in row[start : start + BUTTONS_PER_BLOCK]:
                label = button.label if len(button.label) <= LABEL_LIMIT else button.label[: LABEL_LIMIT - 1] + "…"
                elements.append(
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": label or "…", "emoji": True},
                        "value": button.payload,
                        "action_id": f"{ACTION_ID_PREFIX}{n}",
                    }
                )
                n += 1
            if elements:
                out.append({"type": "actions", "elements": elements})
    return out
