"""Starting the channels: one platform that cannot be reached does not keep the others down.

A channel whose start fails with a configuration error (a token the platform
refuses) stops the gateway: that is the operator's to fix.  Any other failure (the
platform unreachable, a timeout, a 5xx) is retried in the background with a capped
backoff while the other channels serve; ``/healthz`` and ``bot health`` report
``degraded`` with the reason until it is up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import ConfigError
from bot.inbox import Inbox
from bot.retry import Backoff, Outage, retry
from bot.scale.connections import STANDBY

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

RECONNECT = Backoff(first_s=1.0, cap_s=60.0)
"""Waits between tries to start a channel that could not connect."""


class ChannelStarter:
    """Starts channels and keeps retrying the ones that could not connect."""

    def __init__(
        self,
        channels: Sequence[Any],
        inbox: Inbox,
        *,
        progress: Progress | None = None,
        backoff: Backoff = RECONNECT,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.channels = list(channels)
        self.inbox = inbox
        self.progress = progress or (lambda _line: None)
        self.backoff = backoff
        self.clock = clock
        self.status: dict[str, str] = {c.name: "stopped" for c in self.channels}
        """Per channel: ``up``, ``connecting (…)`` while retried, or ``stopped``."""
        self._retries: dict[str, asyncio.Task[None]] = {}
        self._outages = {c.name: Outage(log, f"channel {c.name}: cannot start", backoff.cap_s) for c in self.channels}
        """A channel that cannot connect is logged once per change (not at every try), then once when it is up."""

    @property
    def degraded(self) -> list[str]:
        return [f"{name}: {state}" for name, state in self.status.items() if state != "up" and state != STANDBY]

    async def start_all(self, *, skip: Sequence[Any] = ()) -> None:
        """Start every channel but those in ``skip`` (started later by :meth:`start_one`)."""
        for channel in self.channels:
            if channel not in skip:
                await self.start_one(channel)

    async def start_one(self, channel: Any) -> None:
        self.progress(f"channel {channel.name}: connecting…")
        try:
            await channel.start(self.inbox)
        except ConfigError:
            raise
        except Exception as exc:  # unreachable, timed out, refused for now: retried while the rest serve
            reason = _reason(exc)
            self.status[channel.name] = f"connecting (retrying: {reason})"
            self.progress(f"channel {channel.name}: not reachable ({reason}); retrying in the background")
            self._outages[channel.name].failed(exc)
            self._retries[channel.name] = asyncio.create_task(self._retry(channel), name=f"start-{channel.name}")
        else:
            self.status[channel.name] = "up"
            self.progress(f"channel {channel.name}: ready")

    async def stop_one(self, channel: Any, status: str = "stopped") -> None:
        """Stop receiving on ``channel`` (a retry in progress too); it can still send."""
        retry = self._retries.pop(channel.name, None)
        if retry is not None:
            retry.cancel()
            await asyncio.gather(retry, return_exceptions=True)
        await channel.stop()
        self.status[channel.name] = status

    async def _retry(self, channel: Any) -> None:
        async def again() -> None:
            await channel.stop()  # whatever the failed start left half open
            await channel.start(self.inbox)

        def delay_after(exc: Exception, attempt: int) -> float | None:
            return None if isinstance(exc, ConfigError) else self.backoff.delay(attempt + 1)

        def told(exc: Exception, _attempt: int, _delay: float) -> None:
            self.status[channel.name] = f"connecting (retrying: {_reason(exc)})"
            self._outages[channel.name].failed(exc)

        await self.clock.sleep(self.backoff.delay(1))
        try:
            await retry(again, delay_after, clock=self.clock, on_retry=told)
        except ConfigError as exc:
            self.status[channel.name] = f"failed: {exc}"
            log.error("channel %s: %s", channel.name, exc)
            return
        self.status[channel.name] = "up"
        self._outages[channel.name].recovered("up")

    async def stop(self) -> None:
        for task in self._retries.values():
            task.cancel()
        await asyncio.gather(*self._retries.values(), return_exceptions=True)
        self._retries.clear()
        for name in self.status:
            self.status[name] = "stopped"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__
