"""Budgets: tokens and estimated cost per person and per chat, per day and per month.

Every model call of a run is counted (:class:`bot.ops.metered.BudgetedModel` wraps the run's models) against
the account that asked (``user:<channel:user_id>``) and the chat (``chat:<channel:chat_id>``), for the day and
the month in ``budgets.timezone``. With a limit set, the call is checked first: a scope over any of its limits
raises :class:`BudgetExceeded`, the run ends with that one message, and nothing is sent to the model. The
periods are part of the row's key, so a new day (or month) starts from nothing: limits reset on schedule
with no job to run. Cost is estimated from ``budgets.prices`` (per million tokens).

Counts are added up in memory and written once a second (:data:`FLUSH_S`; at stop too; a crash loses at most
that second's counts), one row per scope and period, instead of four upserts per model call. A check reads the
rows once and keeps them (:attr:`Budgets._stored`, this process's writes added as they commit) and adds what is
not written yet: exact in one process, at most a second behind other processes. Upserts per call, or a read per
check, cost a measurable share of the gateway's throughput; buffered, counting costs about nothing (see
bench/README.md, "Budgets").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from agents.models.base import ModelError, ModelResponse, Usage
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.ops import BudgetsSection, Limits
from bot.events import ChatKey
from bot.store.ports import UsageRepo
from bot.store.values import Spent

log = logging.getLogger(__name__)

FLUSH_S = 1.0
"""How often counted usage is written."""
CACHED_ROWS = 20_000
"""Usage rows kept read (four per person and chat active today); past it they are read again."""


class BudgetExceeded(ModelError):
    """A budget is used up: the message says which, and when it resets."""

    def __init__(self, text: str, scope: str) -> None:
        super().__init__(text)
        self.scope = scope


@dataclass(frozen=True, slots=True)
class Payer:
    """Whose budgets a run's model calls use."""

    account: str
    """``channel:user_id``."""
    chat: str
    """``channel:chat_id`` (the chat's settings key: a Slack thread counts towards its channel)."""
    exempt: bool = False

    @property
    def scopes(self) -> tuple[str, str]:
        return f"user:{self.account}", f"chat:{self.chat}"


class Budgets:
    def __init__(
        self,
        config: BudgetsSection,
        usage: UsageRepo,
        *,
        clock: Clock = SYSTEM_CLOCK,
        refused: Callable[[str], None] | None = None,
    ) -> None:
        """``refused``: told the scope kind (``user``, ``chat``) of every refusal (a metric)."""
        self.config = config
        self.usage = usage
        self.zone = ZoneInfo(config.timezone)
        self.clock = clock
        self._refused = refused
        self._limited = config.limited()
        """Whether any limit is set (the configuration does not change while the gateway runs)."""
        self._pending: dict[tuple[str, str], Spent] = {}
        """Counted and not written yet."""
        self._writing: dict[tuple[str, str], Spent] = {}
        """Being written (still counted by checks until the write committed)."""
        self._flusher: asyncio.Task[None] | None = None
        self._io = asyncio.Lock()
        """Held by a flush's write and a read of the rows: a read that saw a write commit while the written
        counts were still in ``_writing`` counted them twice (seen under load)."""
        self._flushes = 0
        """Writes so far: a read that a write overtook is not kept."""
        self._stored: dict[tuple[str, str], tuple[Spent, float]] = {}
        """Rows read (and this process's writes added since), with when they were read: in one process they
        are exact (only this process writes them); with ``store.shared`` they are believed :data:`FLUSH_S`."""

    def payer(self, chat: ChatKey, user_id: str, admin: bool) -> Payer:
        """Whose budgets ``user_id``'s calls in ``chat`` spend (``admin``: exempt when ``budgets.admins_exempt``)."""
        return Payer(f"{chat.channel}:{user_id}", chat.settings_key, self.config.admins_exempt and admin)

    def start(self) -> None:
        self.usage.keep_days(self.config.retention_days)

    async def stop(self) -> None:
        """Write what was counted (before the store closes)."""
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
            self._flusher = None
        await self.flush()

    async def flush(self) -> None:
        if not self._pending:
            return
        async with self._io:
            self._writing, self._pending = self._pending, {}
            try:
                await self.usage.add(list(self._writing.values()))
                self._flushes += 1
                for key, spent in self._writing.items():
                    if key in self._stored:
                        row, read_at = self._stored[key]
                        self._stored[key] = (row + spent, read_at)
            except Exception:
                log.exception(
                    "budgets: could not write the usage of %d scope(s); kept for the next write", len(self._writing)
                )
                for key, spent in self._writing.items():
                    self._pending[key] = spent + self._pending[key] if key in self._pending else spent
            finally:
                self._writing = {}

    async def _flush_every(self) -> None:
        try:
            while self._pending:
                await self.clock.sleep(FLUSH_S)
                await self.flush()
        finally:
            self._flusher = None

    # -- periods ---------------------------------------------------------------------------------

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.time(), self.zone)

    def periods(self, now: datetime | None = None) -> tuple[str, str]:
        """Today's and this month's period keys."""
        now = now or self.now()
        return f"d{now:%Y-%m-%d}", f"m{now:%Y-%m}"

    def resets(self, monthly: bool, now: datetime | None = None) -> tuple[datetime, timedelta]:
        """When the day (or month) ends here, and how long that is from now."""
        now = now or self.now()
        if monthly:
            first = (now.replace(day=28) + timedelta(days=4)).replace(day=1)
            end = datetime(first.year, first.month, 1, tzinfo=self.zone)
        else:
            tomorrow = now.date() + timedelta(days=1)
            end = datetime(tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=self.zone)
        return end, end - now

    # -- checking and counting ---------------------------------------------------------------------

    def checks(self, payer: Payer) -> bool:
        """Whether :meth:`check` looks at ``payer``'s use (a limit is set and it is not exempt)."""
        return self._limited and not payer.exempt

    async def check(self, payer: Payer) -> None:
        """Raise :class:`BudgetExceeded` when a scope of ``payer`` is over one of its limits."""
        if not self.checks(payer):
            return
        now = self.now()
        day, month = self.periods(now)
        user, chat = payer.scopes
        spent = await self.spent((user, chat), (day, month))
        for scope, limits, kind in ((user, self.config.user, "user"), (chat, self.config.chat, "chat")):
            for period, monthly in ((day, False), (month, True)):
                over = _over(spent[(scope, period)], limits, monthly, self.config.currency)
                if over is not None:
                    if self._refused is not None:
                        self._refused(kind)
                    raise BudgetExceeded(self._refusal(kind, monthly, over, now), kind)

    def _refusal(self, kind: str, monthly: bool, over: str, now: datetime) -> str:
        span = "monthly" if monthly else "daily"
        whose = "You have used your" if kind == "user" else "This chat has used its"
        end, left = self.resets(monthly, now)
        when = f"{end:%Y-%m-%d} 00:00" if monthly else "midnight"
        return (
            f"⛔ {whose} {span} model budget ({over}), so I stopped before asking the model. "
            f"It resets at {when} {self.config.timezone}, in {_span(left)}. An admin can raise the limit."
        )

    def cost(self, model: str, usage: Usage) -> float:
        price = self.config.price(model)
        if price is None:
            return 0.0
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = price.input if price.cached is None else price.cached
        fresh = usage.input_tokens - cached
        return (fresh * price.input + cached * cached_price + usage.output_tokens * price.output) / 1_000_000

    async def spent(self, scopes: tuple[str, ...], periods: tuple[str, ...]) -> dict[tuple[str, str], Spent]:
        """What ``scopes`` used in ``periods``: the stored rows and what this process has not written yet."""
        stored = await self._rows(scopes, periods)
        out = {}
        for scope in scopes:
            for period in periods:
                total = stored.get((scope, period)) or Spent(scope, period)
                for unwritten in (self._writing, self._pending):
                    if (scope, period) in unwritten:
                        total = total + unwritten[(scope, period)]
                out[(scope, period)] = total
        return out

    async def _rows(self, scopes: tuple[str, ...], periods: tuple[str, ...]) -> dict[tuple[str, str], Spent]:
        """The stored rows, from :attr:`_stored` while it may be believed, else read (in one query)."""
        now = self.clock.monotonic()
        keys = [(s, p) for s in scopes for p in periods]
        fresh = {k: v for k in keys if (v := self._stored.get(k)) and (not self.usage.shared or now - v[1] < FLUSH_S)}
        if len(fresh) == len(keys):
            return {k: row for k, (row, _at) in fresh.items()}
        async with self._io:  # not while a flush writes: the read could hold its counts and `_writing` too
            flushes = self._flushes
            read = await self.usage.spent(scopes, periods)
        if len(self._stored) > CACHED_ROWS:
            self._stored.clear()
        out = {key: read.get(key) or Spent(*key) for key in keys}
        if flushes == self._flushes:
            self._stored.update((key, (row, now)) for key, row in out.items())
        return out

    async def spend(self, payer: Payer, response: ModelResponse, model: str) -> None:
        """Count one model call (written within :data:`FLUSH_S`; checks see it at once)."""
        self.count(payer, response, model)

    def count(self, payer: Payer, response: ModelResponse, model: str) -> None:
        """:meth:`spend`, on the event loop's thread (no coroutine to make and await)."""
        usage = response.usage
        if not (usage.input_tokens or usage.output_tokens):
            return
        cost = self.cost(response.model or model, usage)
        for scope in payer.scopes:
            for period in self.periods():
                call = Spent(scope, period, 1, usage.input_tokens, usage.output_tokens, usage.thinking_tokens,
                             usage.cached_tokens, cost)  # fmt: skip
                key = (scope, period)
                self._pending[key] = self._pending[key] + call if key in self._pending else call
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush_every())

    # -- reading ---------------------------------------------------------------------------------

    async def report(self, payer: Payer) -> str:
        """``/usage``: this person's and this chat's use today and this month, against the limits."""
        day, month = self.periods()
        user, chat = payer.scopes
        spent = await self.spent((user, chat), (day, month))
        lines = []
        for title, scope, limits in (("You", user, self.config.user), ("This chat", chat, self.config.chat)):
            parts = []
            for label, period, monthly in (("today", day, False), ("this month", month, True)):
                used = spent[(scope, period)]
                parts.append(f"{label} {self._amount(used, limits, monthly, payer.exempt)}")
            lines.append(f"{title}: " + "; ".join(parts))
        if not self.config.limited():
            lines.append("No limits are set (budgets.user / budgets.chat).")
        elif payer.exempt:
            lines.append("Admins are not limited here (budgets.admins_exempt).")
        else:
            _end, left = self.resets(False)
            lines.append(f"Days start at midnight {self.config.timezone} (next in {_span(left)}).")
        return "\n".join(lines)

    def _amount(self, used: Spent, limits: Limits, monthly: bool, exempt: bool) -> str:
        token_limit = limits.monthly_tokens if monthly else limits.daily_tokens
        cost_limit = limits.monthly_cost if monthly else limits.daily_cost
        out = f"{used.tokens:,} tokens"
        if token_limit and self.config.limited() and not exempt:
            out += f" of {token_limit:,}"
        out += f", {used.cost:.4f} {self.config.currency}"
        if cost_limit and self.config.limited() and not exempt:
            out += f" of {cost_limit:.2f}"
        return out + f" ({used.calls} model call{'s' if used.calls != 1 else ''})"

    async def top(self, monthly: bool, limit: int = 10) -> str:
        """``/usage top``: the accounts that used the most, today or this month."""
        day, month = self.periods()
        period = month if monthly else day
        await self.flush()
        rows = await self.usage.top("user:", period, limit)
        when = "this month" if monthly else "today"
        if not rows:
            return f"Nobody used the model {when}."
        lines = [f"Top users {when} ({period[1:]}, {self.config.timezone}):"]
        for i, row in enumerate(rows, 1):
            lines.append(
                f"{i}. {row.scope.removeprefix('user:')}: {row.tokens:,} tokens, "
                f"{row.cost:.4f} {self.config.currency}, {row.calls} calls"
            )
        return "\n".join(lines)


def _over(used: Spent, limits: Limits, monthly: bool, currency: str) -> str | None:
    """What of ``limits`` ``used`` reached, described; None when within them."""
    tokens = limits.monthly_tokens if monthly else limits.daily_tokens
    cost = limits.monthly_cost if monthly else limits.daily_cost
    if tokens and used.tokens >= tokens:
        return f"{used.tokens:,} of {tokens:,} tokens"
    if cost and used.cost >= cost:
        return f"{used.cost:.2f} of {cost:.2f} {currency}"
    return None


def _span(delta: timedelta) -> str:
    minutes = max(1, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"
