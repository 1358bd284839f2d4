"""The audit log of the run tables: who changed which setting (or anything else audited) from what to what,
values redacted; pruned after ``audit_days`` with the finished runs (:mod:`bot.store.sql.repos.runs`)."""

from __future__ import annotations

import json
from typing import Any

from bot.redaction import redact_value
from bot.store.sql.ops import Step
from bot.store.sql.store import SqlStore
from bot.store.values import utcnow

PRUNE_AUDIT = "DELETE FROM audit_log WHERE at < ?"


class AuditTable:
    """The audit part of :class:`~bot.store.sql.repos.runs.RunStore` (one of its bases)."""

    store: SqlStore

    async def change_setting(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Set (``new=None`` deletes) a chat or global setting and audit it, atomically."""
        await self.store.set_chat_setting(scope, name, new, extra=[self.audit_step(actor, scope, name, old, new)])

    async def audit(self, actor: str, scope: str, name: str, old: Any, new: Any) -> None:
        """Audit a change made elsewhere (not a setting of :meth:`change_setting`)."""
        await self.store.write([self.audit_step(actor, scope, name, old, new)])

    @staticmethod
    def audit_step(actor: str, scope: str, name: str, old: Any, new: Any) -> Step:
        return Step(
            "INSERT INTO audit_log (at, actor, scope, name, old, new) VALUES (?, ?, ?, ?, ?, ?)",
            (
                utcnow(),
                actor,
                scope,
                name,
                None if old is None else json.dumps(redact_value(old), ensure_ascii=False),
                None if new is None else json.dumps(redact_value(new), ensure_ascii=False),
            ),
        )

    async def audit_log(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self.store.read(
            "SELECT at, actor, scope, name, old, new FROM audit_log ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [
            {
                "at": at,
                "actor": actor,
                "scope": scope,
                "name": name,
                "old": json.loads(old) if old else None,
                "new": json.loads(new) if new else None,
            }
            for at, actor, scope, name, old, new in rows
        ]
