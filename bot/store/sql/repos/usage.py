"""The ``usage`` table: model tokens and estimated cost per scope and period (migration 0009).

A scope is ``user:<channel:user_id>`` or ``chat:<channel:chat_id>``; a period ``d<YYYY-MM-DD>`` or ``m<YYYY-MM>``
in the budgets' time zone, so a new day starts a new row: limits reset by themselves, and old rows go with
retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from bot.store.sql.engine import SqlEngine
from bot.store.sql.ops import Step
from bot.store.values import Spent, utcnow

__all__ = ["Spent", "UsageStore"]

_ADD = (
    "INSERT INTO usage (scope, period, calls, input_tokens, output_tokens, thinking_tokens, cached_tokens, cost, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, period) DO UPDATE SET "
    "calls = usage.calls + excluded.calls, input_tokens = usage.input_tokens + excluded.input_tokens, "
    "output_tokens = usage.output_tokens + excluded.output_tokens, "
    "thinking_tokens = usage.thinking_tokens + excluded.thinking_tokens, "
    "cached_tokens = usage.cached_tokens + excluded.cached_tokens, cost = usage.cost + excluded.cost, "
    "updated_at = excluded.updated_at"
)
_COLUMNS = "scope, period, calls, input_tokens, output_tokens, thinking_tokens, cached_tokens, cost"


class UsageStore:
    """:class:`~bot.store.ports.UsageRepo` on the SQL store."""

    def __init__(self, store: SqlEngine) -> None:
        self.store = store

    @property
    def shared(self) -> bool:
        """Other processes write the rows too."""
        return self.store.shared

    async def add(self, spent: Sequence[Spent]) -> None:
        """Add each of ``spent`` (calls, tokens and cost of a scope in a period) to its row, in one commit."""
        await self.store.write(self.add_steps(spent))

    def add_steps(self, spent: Sequence[Spent]) -> list[Step]:
        now = utcnow()
        return [
            Step(_ADD, (s.scope, s.period, s.calls, s.input_tokens, s.output_tokens, s.thinking_tokens,
                        s.cached_tokens, s.cost, now))
            for s in spent
        ]  # fmt: skip

    async def spent(self, scopes: Sequence[str], periods: Sequence[str]) -> dict[tuple[str, str], Spent]:
        """What ``scopes`` used in ``periods`` (a missing pair used nothing), in one read."""
        marks = ", ".join("?" * len(scopes))
        spans = ", ".join("?" * len(periods))
        rows = await self.store.read(
            f"SELECT {_COLUMNS} FROM usage WHERE scope IN ({marks}) AND period IN ({spans})", (*scopes, *periods)
        )
        return {(r[0], r[1]): _spent(r) for r in rows}

    async def top(self, prefix: str, period: str, limit: int = 10) -> list[Spent]:
        """The scopes starting with ``prefix`` that used the most tokens in ``period``."""
        rows = await self.store.read(
            f"SELECT {_COLUMNS} FROM usage WHERE period = ? AND scope LIKE ? "
            "ORDER BY input_tokens + output_tokens DESC, scope LIMIT ?",
            (period, prefix + "%", limit),
        )
        return [_spent(r) for r in rows]

    def keep_days(self, days: int) -> None:
        """Delete rows not updated for ``days`` in the store's retention passes."""
        self.store.add_retention(lambda: self.retention(days))

    def retention(self, days: int) -> list[Step]:
        return [Step("DELETE FROM usage WHERE updated_at < ?", (utcnow() - timedelta(days=days),))]


def _spent(row: Sequence[Any]) -> Spent:
    scope, period, calls, inp, out, think, cached, cost = row
    return Spent(str(scope), str(period), int(calls), int(inp), int(out), int(think), int(cached), float(cost))
