"""The context a run is given (its history and its memory part of the system prompt), as
:meth:`RunContexts.build` puts it together from the cached chat state, is the plain rule applied to what is
stored: the newest ``history_limit`` rows before the run's message, after the chat's summary (an isolated agent:
its own turns), cut to the context budget left by the summary, older files left out; on randomized chats."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from agents.messages import Media, Message, ToolCall, ToolResult, fit_context, recent_media
from bot.runs.context import own_turns
from bot.store.rows import RunRow

AGENTS = {
    "talker": (
        "---\nkind: agent\nname: talker\ndescription: Talks.\nrunner: react\ncontextMode: shared\n---\nYou talk.\n"
    ),
    "loner": (
        "---\nkind: agent\nname: loner\ndescription: Works alone.\nrunner: react\ncontextMode: isolated\n---\n"
        "You work alone.\n"
    ),
}
SUMMARY_HEADER = "Earlier in this conversation (a summary of turns no longer shown):\n"


def _turns(rng: random.Random, n: int) -> list[Message]:
    """About ``n`` messages: user turns (some with a file), answers by either agent, tool exchanges."""
    out: list[Message] = []
    while len(out) < n:
        text = "t" * rng.randint(1, 500)
        k = len(out)
        if rng.random() < 0.25:
            photo = Media(id=f"m{k}", kind="image", mime_type="image/jpeg", size=10, path=f"/f/{k}")
            out.append(Message.user(text, media=(photo,)))
        else:
            out.append(Message.user(text))
        agent = rng.choice(["talker", "loner"])
        if rng.random() < 0.3:
            call = ToolCall(id=f"c{k}", name="search", args={"q": text[:30]})
            out.append(Message(role="assistant", tool_calls=(call,), agent=agent))
            out.append(Message.results([ToolResult(call_id=f"c{k}", name="search", content=text)]))
        for _ in range(rng.choice([1, 1, 2])):
            out.append(Message.assistant("a" * rng.randint(1, 700), agent=agent))
    return out


async def _stored(h: Any, key: str, limit: int) -> list[tuple[int, Message]]:
    rows = await h.gateway.store.read("SELECT id, data FROM session_messages WHERE chat_key = ? ORDER BY id", (key,))
    return [(int(i), Message.model_validate(json.loads(data))) for i, data in rows][-limit:]


async def _summary(h: Any, key: str) -> tuple[str, int]:
    rows = await h.gateway.store.read("SELECT summary, upto_id FROM chat_summaries WHERE chat_key = ?", (key,))
    return (str(rows[0][0]), int(rows[0][1])) if rows else ("", 0)


def _expected(
    rows: list[tuple[int, Message]], summary: tuple[str, int], agent: str, isolated: bool, cutoff: int, s: Any
) -> tuple[list[Message], str]:
    text, upto = ("", 0) if isolated else summary
    budget = s.store.context_chars - len(text)
    if isolated:
        history = fit_context(own_turns([m for i, m in rows if i < cutoff], agent), budget)
    else:
        history = fit_context([m for i, m in rows if upto < i < cutoff], budget)
    if sum(1 for _, m in rows if m.media) > s.media.history_items:
        history = recent_media(history, s.media.history_items)
    return history, SUMMARY_HEADER + text if text else ""


@pytest.mark.parametrize(("limit", "chars"), [(40, 1500), (200, 24000)])
async def test_a_runs_context_is_the_plain_rule_on_randomized_chats(
    make_harness: Any, scripted: Any, tmp_path: Path, limit: int, chars: int
) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    for name, text in AGENTS.items():
        (folder / f"{name}.md").write_text(text)
    rng = random.Random(limit)
    h = await make_harness(
        scripted(),
        agents={"dirs": [str(folder)]},
        store={"history_limit": limit, "context_chars": chars},
        media={"history_items": 2},
    )
    settings, contexts = h.gateway.settings, h.gateway.manager.contexts
    for chat in range(10):
        key = f"console:r{limit}-{chat}"
        for batch in range(3):
            await h.gateway.store.append(key, _turns(rng, rng.randint(0, limit)))
            rows = await _stored(h, key, 10**6)
            if rows and rng.random() < 0.6:  # a summary covering a random part of the history
                upto = rng.choice(rows)[0]
                await h.gateway.memory.memories.set_summary(key, f"- summary of chat {chat} up to {upto}", upto)
            rows = await _stored(h, key, limit)
            summary = await _summary(h, key)
            cutoffs = {rows[-1][0], rows[-1][0] + 1, rows[len(rows) // 2][0]} if rows else {1}
            for name in AGENTS:
                agent = h.gateway.catalog.get(name)
                assert agent is not None
                for cutoff in sorted(cutoffs):
                    run = RunRow(f"run-{batch}", key, name, "running", "corr", "u1", None, cutoff, direct=True)
                    ctx = await contexts.build(run, agent, resumed=False, query="what now?")
                    history, extra = _expected(rows, summary, name, name == "loner", cutoff, settings)
                    assert list(ctx.history) == history, (limit, chat, batch, name, cutoff)
                    assert ctx.system_extra == extra, (limit, chat, batch, name, cutoff)
