"""More in-memory repositories (:mod:`bot.store.ports`) beside ``tests/fakes/repos.py``: eval runs, usage and
pairing, held to the SQL ones by ``tests/store/test_repo_contract.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot import ids
from bot.store.values import CODE_LENGTH, Change, Paired, Spent, WaitingCode, normal_code, utcnow


class FakeEvalRuns:
    """:class:`~bot.store.ports.EvalRepo` in a list of (line, data)."""

    def __init__(self) -> None:
        self.rows: list[tuple[tuple[Any, ...], str]] = []

    async def add(self, line: Sequence[Any], data: str) -> None:
        self.rows.append((tuple(line), data))

    async def recent(self, suite: str | None, limit: int) -> list[tuple[Any, ...]]:
        lines = [line for line, _ in self.rows if suite is None or line[1] == suite]
        return sorted(lines, key=lambda line: line[9], reverse=True)[:limit]

    async def data(self, run_id: str) -> str | None:
        return next((data for line, data in self.rows if line[0] == run_id), None)

    async def previous(self, suite: str, run_id: str, started: datetime) -> str | None:
        before = [
            (line[9], data)
            for line, data in self.rows
            if line[1] == suite and line[0] != run_id and line[9] <= started.replace(tzinfo=None)
        ]
        return max(before, key=lambda pair: pair[0])[1] if before else None


class FakeUsage:
    """:class:`~bot.store.ports.UsageRepo` in a dict by (scope, period)."""

    shared = False

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Spent] = {}
        self.kept_days: int | None = None

    async def add(self, spent: Sequence[Spent]) -> None:
        for s in spent:
            key = (s.scope, s.period)
            self.rows[key] = self.rows[key] + s if key in self.rows else s

    async def spent(self, scopes: Sequence[str], periods: Sequence[str]) -> dict[tuple[str, str], Spent]:
        return {k: v for k, v in self.rows.items() if k[0] in scopes and k[1] in periods}

    async def top(self, prefix: str, period: str, limit: int = 10) -> list[Spent]:
        found = [s for (scope, p), s in self.rows.items() if p == period and scope.startswith(prefix)]
        return sorted(found, key=lambda s: (-s.tokens, s.scope))[:limit]

    def keep_days(self, days: int) -> None:
        self.kept_days = days


class FakePairing:
    """:class:`~bot.store.ports.PairingRepo` in two dicts; ``clock`` gives naive UTC (as the store's clock)."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.clock = clock
        self.codes: dict[str, WaitingCode] = {}
        self.senders: dict[tuple[str, str], Paired] = {}
        self.committed: list[Change] = []
        """The changes committed with an approval or a revocation (an audit row)."""

    def _live(self) -> list[WaitingCode]:
        now = self.clock()
        self.codes = {c: w for c, w in self.codes.items() if w.expires_at > now}
        return list(self.codes.values())

    async def issue(
        self, channel: str, user_id: str, user_name: str, chat_key: str, minutes: float, max_pending: int
    ) -> WaitingCode | None:
        live = self._live()
        held = next((w for w in live if (w.channel, w.user_id) == (channel, user_id)), None)
        if held is not None:
            return held
        if sum(1 for w in live if w.channel == channel) >= max_pending:
            return None
        now = self.clock()
        code = ids.new_code(CODE_LENGTH)
        self.codes[code] = WaitingCode(
            code, channel, user_id, user_name[:255], chat_key, now, now + timedelta(minutes=minutes)
        )
        return self.codes[code]

    async def find(self, code: str) -> WaitingCode | None:
        self._live()
        return self.codes.get(normal_code(code))

    async def waiting(self) -> list[WaitingCode]:
        return sorted(self._live(), key=lambda w: w.created_at, reverse=True)

    async def approve(self, code: WaitingCode, by: str, extra: Sequence[Change] = (), *, admin: bool = False) -> bool:
        self._live()
        if self.codes.pop(code.code, None) is None:
            return False
        self.senders[(code.channel, code.user_id)] = Paired(
            code.channel, code.user_id, code.user_name, by, self.clock(), admin
        )
        self.committed.extend(extra)
        return True

    async def unpair(self, channel: str, user_id: str, extra: Sequence[Change] = ()) -> bool:
        if self.senders.pop((channel, user_id), None) is None:
            return False
        self.committed.extend(extra)
        return True

    async def is_paired(self, channel: str, user_id: str) -> bool:
        return (channel, user_id) in self.senders

    async def standing(self, channel: str, user_id: str) -> bool | None:
        paired = self.senders.get((channel, user_id))
        return None if paired is None else paired.is_admin

    async def admin_channels(self) -> set[str]:
        return {p.channel for p in self.senders.values() if p.is_admin}

    async def paired(self) -> list[Paired]:
        return sorted(self.senders.values(), key=lambda p: p.approved_at, reverse=True)
