"""What is folded into a chat's summary (:func:`to_fold`, reading the chat's cached deques in place) is what the
plain walk over copies of them gave, on randomized histories: sizes, roles, summaries covering part of them."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence

from agents.messages import Message
from bot.memory.summary import Fold, to_fold


def walked(
    ids: Sequence[int], messages: Sequence[Message], sizes: Sequence[int], upto_id: int, room: int, most: int
) -> Fold | None:
    """The rule as a plain walk over lists: the first unsummarised row, the newest user turn, the older half."""
    start = next((i for i, row in enumerate(ids) if row > upto_id), len(ids))
    total = sum(sizes[start:])
    count = len(ids) - start
    if count < 2 or (total <= room and count <= most):
        return None
    newest = max((i for i in range(start, len(ids)) if messages[i].role == "user"), default=start)
    if newest <= start:
        return None
    half, running, cut = total / 2, 0, start
    at_least = count - most // 2 if count > most else 1
    for i in range(start, newest):
        running += sizes[i]
        cut = i + 1
        if running >= half and cut - start >= at_least:
            break
    while cut < newest and messages[cut].role != "user":
        cut += 1
    return Fold(ids[cut - 1], list(messages[start:cut]))


def test_a_fold_read_in_place_is_the_plain_walk() -> None:
    rng = random.Random(5)
    users = [Message.user("u" * n) for n in range(1, 40)]
    others = [Message.assistant("a" * n) for n in range(1, 40)]
    for _ in range(3000):
        n = rng.randint(0, 220)
        user_share = rng.choice([0.0, 0.05, 0.5, 0.9])
        messages = [rng.choice(users) if rng.random() < user_share else rng.choice(others) for _ in range(n)]
        ids, row = [], 0
        for _ in range(n):
            row += rng.randint(1, 4)
            ids.append(row)
        sizes = [m.size() for m in messages]
        upto = rng.choice([0, *ids, row + 5]) if ids else rng.choice([0, 3])
        room, most = rng.choice([10, 200, 2000, 10**6]), rng.choice([1, 2, 10, 150])
        expected = walked(ids, messages, sizes, upto, room, most)
        assert to_fold(deque(ids), deque(messages), deque(sizes), upto, room, most) == expected
        assert to_fold(ids, messages, sizes, upto, room, most) == expected
