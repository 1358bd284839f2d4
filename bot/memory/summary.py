"""Summarised history: turns that leave a chat's context window are folded into a running summary.

After each run the chat's unsummarised turns are measured; when they no longer fit the window (characters,
or three quarters of ``store.history_limit`` messages, before retention would delete them), the older half
of them is summarised together with the previous summary, by a model (a cheap one can be configured) or,
without one, extractively: the sentences in which people state facts about themselves, their plans and
decisions are kept, the newest first when they do not all fit.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from agents.messages import Message
from agents.models.base import Model, ModelError
from bot.memory.text import query_terms

log = logging.getLogger(__name__)

PROMPT = (
    "You keep the running summary of a long chat conversation, so it can go on after its older messages are "
    "gone. Merge the new messages into the summary. Keep what later turns may need: facts people stated "
    "about themselves (names, preferences, places, dates, numbers), decisions, agreements, open questions "
    "and tasks. Drop greetings and small talk. Write short bullet lines in the conversation's language, at "
    "most {limit} characters in all. Answer with the new summary only."
)

FIRST_PERSON = re.compile(
    r"(?i)\b(i|i'm|im|i've|i'd|i'll|my|mine|me|we|we're|our|ours)\b|我|我们|我的|咱们|私|僕|俺|저는|제"
)
FACT_WORDS = re.compile(
    r"(?i)\b(name|called|live|living|moved|work|working|born|birthday|allergic|prefer|like|love|hate|favou?rite|"
    r"always|never|decided|agreed|plan|planning|deadline|budget|meeting|remember|important|wife|husband|"
    r"son|daughter|kids?|dog|cat|email|phone|address|vegetarian|vegan)\b|叫|名字|住在|喜欢|讨厌|生日|过敏|决定|计划|预算"
)
QUESTION = re.compile(
    r"[?？]\s*$|^(what|who|why|how|when|where|which|can|could|would|will|do|does|did|is|are|tell|write|give|show|"
    r"explain|make|list|translate)\b",
    re.IGNORECASE,
)
DETAIL = re.compile(r"\d|\b[A-Z][a-z]+")
SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
BULLET = "- "


@dataclass(frozen=True)
class Fold:
    """What to summarise: the turns leaving the window (their last row id) and the text to fold in."""

    upto_id: int
    messages: list[Message]


def to_fold(
    ids: Sequence[int],
    messages: Sequence[Message],
    sizes: Sequence[int],
    upto_id: int,
    room_chars: int,
    max_messages: int,
) -> Fold | None:
    """The older half (by size) of the unsummarised turns when they overflow the window, cut before a user
    turn so the window still starts with one, and never the newest turn; None when they fit.

    ``ids`` ascend (a chat's history rows in order).  The sequences are read in place (a chat's cached deques:
    nothing is copied but the turns folded), and only from where the summary ends: the first unsummarised row
    is found by bisection and the newest user turn from the right end, not by copying the three and walking them
    from the left (see bench/README.md)."""
    start = bisect_right(ids, upto_id)
    n = len(ids)
    count = n - start
    total = sum(islice(sizes, start, None))
    if count < 2 or (total <= room_chars and count <= max_messages):
        return None
    newest = n - 1
    while newest > start and messages[newest].role != "user":
        newest -= 1
    if newest <= start:
        return None
    half, running, cut = total / 2, 0, start
    at_least = count - max_messages // 2 if count > max_messages else 1
    for size in islice(sizes, start, newest):
        running += size
        cut += 1
        if running >= half and cut - start >= at_least:
            break
    while cut < newest and messages[cut].role != "user":
        cut += 1
    return Fold(ids[cut - 1], list(islice(messages, start, cut)))


def transcript(messages: Sequence[Message], limit: int = 12000) -> str:
    lines = []
    for m in messages:
        said = (m.text or "").strip()
        if m.role == "tool" or not said:
            continue
        who = "User" if m.role == "user" else f"Assistant ({m.agent})" if m.agent else "Assistant"
        lines.append(f"{who}: {said}")
    text = "\n".join(lines)
    return text[-limit:]


def _score(sentence: str) -> int:
    if QUESTION.search(sentence.strip()):
        return 0
    score = 3 if FIRST_PERSON.search(sentence) else 0
    if score:
        score += 1 if FACT_WORDS.search(sentence) else 0
        score += 1 if DETAIL.search(sentence[1:]) else 0
    return score


def extractive(previous: str, messages: Sequence[Message], limit: int) -> str:
    """A summary without a model: the earlier summary's lines and the people's new fact-stating sentences,
    the best (and, among equals, the newest) that fit in ``limit`` characters, in conversation order."""
    candidates: list[tuple[int, int, str]] = []  # (score, order, line)
    order = 0
    for line in previous.splitlines():
        line = line.removeprefix(BULLET).strip()
        if line:
            candidates.append((max(_score(line), 3), order, line))
            order += 1
    for m in messages:
        if m.role != "user":
            continue
        for sentence in SENTENCE.findall(m.text or ""):
            sentence = " ".join(sentence.split())[:300]
            score = _score(sentence)
            if score >= 3 and len(sentence) > 3:
                candidates.append((score, order, sentence))
                order += 1
    seen: set[str] = set()
    chosen: list[tuple[int, str]] = []
    used = 0
    for _, position, line in sorted(candidates, key=lambda c: (-c[0], -c[1])):
        key = line.lower()
        if key in seen or used + len(line) + len(BULLET) + 1 > limit:
            continue
        seen.add(key)
        chosen.append((position, line))
        used += len(line) + len(BULLET) + 1
    return "\n".join(BULLET + line for _, line in sorted(chosen))


def without_facts(summary: str, facts: Sequence[str], pattern: re.Pattern[str]) -> str:
    """The running summary rebuilt without forgotten ``facts``: a line that states one goes (it says the fact in
    its words: ``pattern`` finds it, or it has at least half of the fact's words, so a model's paraphrase such as
    "Favourite tea: genmaicha" goes too); the other lines stay as they were."""
    wanted = [set(query_terms(f)) for f in facts]
    kept = []
    for line in summary.splitlines():
        words = set(query_terms(line))
        if pattern.search(line) or any(terms and len(terms & words) * 2 >= len(terms) for terms in wanted):
            continue
        kept.append(line)
    return "\n".join(kept)


class Summariser:
    """Folds turns into a chat's running summary: with ``model``, or extractively when it is None."""

    def __init__(self, model: Model | None, limit: int) -> None:
        self.model = model
        self.limit = limit

    @property
    def name(self) -> str:
        return self.model.name if self.model is not None else "extractive"

    async def fold(self, previous: str, messages: Sequence[Message]) -> str:
        if self.model is None:
            return extractive(previous, messages, self.limit)
        ask = f"Summary so far:\n{previous or '(none yet)'}\n\nNew messages:\n{transcript(messages)}"
        try:
            response = await self.model.request([Message.user(ask)], system=PROMPT.format(limit=self.limit))
        except ModelError as exc:
            log.warning("summary by %s failed (%s): kept extractively", self.name, exc)
            return extractive(previous, messages, self.limit)
        text = (response.text or "").strip()
        if not text:
            return extractive(previous, messages, self.limit)
        if len(text) > self.limit:  # told the limit; a model that overshoots is cut at a line
            text = text[: self.limit].rsplit("\n", 1)[0]
        return text
