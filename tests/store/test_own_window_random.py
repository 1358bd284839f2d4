"""An isolated agent's window, as :meth:`ChatState.own_window` cuts it in one walk from the newest end, is the
plain rule (:func:`fit_context` over :func:`own_turns` of the messages before the run's), on randomized long
chats: several agents' turns, turns left unanswered, tool exchanges, a history that starts with a reply."""

from __future__ import annotations

import random

from agents.messages import Message, ToolCall, ToolResult, fit_context
from bot.runs.context import own_turns
from bot.store.chat_state import ChatState

AGENTS = ("chat", "research", "loner")


def _turn(rng: random.Random, n: int) -> list[Message]:
    """One or two user messages, then none to three replies (tool exchanges among them), mostly by one agent
    (another may answer part of a turn: a handoff)."""
    out = [Message.user("u" * rng.randint(1, 600)) for _ in range(rng.choice([1, 1, 1, 2]))]
    agent = rng.choice(AGENTS)
    for k in range(rng.choice([0, 1, 1, 2, 3])):
        if rng.random() < 0.2:
            agent = rng.choice(AGENTS)
        if rng.random() < 0.25:
            call = ToolCall(id=f"c{n}-{k}", name="search", args={"q": "x"})
            out.append(Message(role="assistant", tool_calls=(call,), agent=agent))
            out.append(Message.results([ToolResult(call_id=f"c{n}-{k}", name="search", content="r" * 50)]))
        out.append(Message.assistant("a" * rng.randint(1, 700), agent=agent))
    return out


def test_an_isolated_agents_window_of_long_randomized_chats_is_the_plain_rule() -> None:
    rng = random.Random(65)
    for limit in (40, 160):
        state = ChatState.loaded([], limit=limit)
        kept: list[tuple[int, Message]] = []
        row_id = 0
        if rng.random() < 0.5:  # the kept history may start with a reply (its question fell out)
            row_id += 1
            state.add(row_id, Message.assistant("first", agent="loner"))
            kept.append((row_id, Message.assistant("first", agent="loner")))
        for n in range(limit):
            for message in _turn(rng, n):
                row_id += rng.randint(1, 3)  # ids grow with gaps (other chats' rows)
                state.add(row_id, message)
                kept = [*kept, (row_id, message)][-limit:]
            if n % 9:
                continue
            for budget in (0, 700, 5000, 10**7):
                for before in (row_id + 1, row_id, kept[len(kept) // 2][0], kept[0][0]):
                    for agent in AGENTS:
                        plain = fit_context(own_turns([m for i, m in kept if i < before], agent), budget)
                        assert state.own_window(before, agent, budget) == plain, (limit, n, budget, before, agent)
