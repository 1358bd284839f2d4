"""A chat's context window, as :meth:`ChatState.window` cuts it on cached sizes, is the window the plain rule gives
(the turns after the summary and before the run's message, cut by :func:`fit_context`), on randomized long chats:
histories near and past their limit, summaries covering part of them, tool exchanges and files."""

from __future__ import annotations

import random
from collections import deque

from agents.messages import Media, Message, ToolCall, ToolResult, fit_context
from bot.store.chat_state import ChatState, _between


def _message(rng: random.Random, n: int) -> Message:
    kind = rng.choice(["user", "user", "assistant", "assistant", "tool", "media"])
    text = "w" * rng.randint(1, 600)
    if kind == "user":
        return Message.user(text)
    if kind == "media":
        photo = Media(id=f"m{n}", kind="image", mime_type="image/jpeg", size=10, path=f"/f/{n}")
        return Message.user(text, media=(photo,))
    if kind == "tool":
        call = ToolCall(id=f"c{n}", name="search", args={"q": text[:40]})
        return Message(role="assistant", tool_calls=(call,), agent="research")
    if rng.random() < 0.2:
        return Message.results([ToolResult(call_id=f"c{n}", name="search", content=text)])
    return Message.assistant(text, agent=rng.choice(["chat", "research"]))


def test_a_slice_of_the_history_is_the_same_from_either_end() -> None:
    for n in (0, 1, 5, 64, 65, 130, 200):
        messages = deque(Message.user(str(i)) for i in range(n))
        plain = list(messages)
        for start in range(0, n + 1, 3):
            for end in range(start, n + 1, 7):
                assert _between(messages, start, end) == plain[start:end], (n, start, end)
            assert _between(messages, start, n) == plain[start:]


def test_the_window_of_long_randomized_chats_is_the_plain_rule() -> None:
    rng = random.Random(2026)
    for limit in (40, 120, 200):
        state = ChatState.loaded([], limit=limit)
        kept: list[tuple[int, Message]] = []
        upto = 0
        row_id = 0
        for n in range(limit * 2 + 37):
            row_id += rng.randint(1, 3)  # ids grow with gaps (other chats' rows)
            message = _message(rng, n)
            state.add(row_id, message)
            kept = [*kept, (row_id, message)][-limit:]
            if rng.random() < 0.03:  # a fold: the summary now covers a random part of what is kept
                upto = kept[rng.randrange(len(kept))][0]
                state.summarised(f"up to {upto}", upto)
            assert state.media == sum(1 for _, m in kept if m.media)
            if n % 5:
                continue
            for budget in (0, 700, 5000, 24000, 10**7):
                for before in (row_id + 1, row_id, kept[len(kept) // 2][0], kept[0][0]):
                    for after in (upto, 0):
                        expected = fit_context([m for i, m in kept if after < i < before], budget)
                        assert state.window(before, budget, after) == expected, (limit, n, budget, before, after)
