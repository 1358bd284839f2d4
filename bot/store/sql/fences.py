"""The store's side of fencing (:mod:`bot.fencing`): the token row of each partition, checked by every fenced write."""

from __future__ import annotations

from collections.abc import Sequence

from bot.fencing import Fence
from bot.store.sql.ops import Step

CHECK_FENCE_PG = "SELECT 1 FROM partition_fences WHERE partition = ? AND token = ? FOR SHARE"
"""A share lock: batches of several workers check tokens side by side; the next owner's raise waits for them."""
CHECK_FENCE_SQLITE = "UPDATE partition_fences SET token = token WHERE partition = ? AND token = ?"
"""SQLite has one writer (and no FOR SHARE): the check only has to count a row."""
RAISE_FENCE = (
    "INSERT INTO partition_fences (partition, token, owner, updated_at) VALUES (?, 1, ?, ?) "
    "ON CONFLICT (partition) DO UPDATE SET token = partition_fences.token + 1, owner = excluded.owner, "
    "updated_at = excluded.updated_at RETURNING token"
)


def behind(fence: Fence | None, steps: Sequence[Step], dialect: str) -> Sequence[Step]:
    """``steps`` preceded by the check of ``fence``'s token (a guard that marks the result ``fenced``)."""
    if fence is None or not steps:
        return steps
    check = CHECK_FENCE_PG if dialect == "postgresql" else CHECK_FENCE_SQLITE
    return [Step(check, (fence.partition, fence.token), guard=True, fence=True), *steps]
