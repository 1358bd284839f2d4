"""The guide's "adding a stage", followed with a toy: a stage that ignores messages with a hushed word, holding
exactly its own (new) dependency, put at its place in the one list (:func:`bot.gateway.handling.build_pipeline`);
events meet it in that order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bot.events import ChatKey, InboundMessage
from bot.gateway.handling import HandlingHost, build_pipeline
from bot.gateway.pipeline import Arrival, Desk, Ignored, Outcome, Pipeline


@dataclass(frozen=True)
class HushedWords:
    """The toy's new dependency: the words that hush a message."""

    words: frozenset[str]

    def said_in(self, text: str) -> bool:
        return any(word.strip(".,;:!?") in self.words for word in text.lower().split())


# Step 1: the stage, a dataclass holding what it uses, with its name and its __call__.
@dataclass
class Hush:
    """Messages with a hushed word are ignored: marked handled, nothing stored, nothing said."""

    hushed: HushedWords
    name: ClassVar[str] = "hush"

    async def __call__(self, turn: Arrival) -> Outcome | None:
        event = turn.event
        if isinstance(event, InboundMessage) and self.hushed.said_in(event.text):
            return Ignored("hushed")
        return None


# Step 2: its construction (and its dependency's) at its place in the list: here after ``addressed``, before
# ``command``.  In the code this is one line in build_pipeline; the toy inserts it into what build_pipeline built.
def build_pipeline_with_hush(g: HandlingHost, desk: Desk) -> Pipeline:
    pipeline = build_pipeline(g, desk)
    stages = list(pipeline.stages)
    stages.insert(pipeline.names.index("command"), Hush(HushedWords(frozenset({"psst"}))))
    return Pipeline(stages, pipeline.settle)


async def test_a_toy_stage_added_by_the_guide_runs_in_its_place(make_harness: Any, scripted: Any) -> None:
    h = await make_harness(scripted("Hello there."))
    supervisor = h.gateway.supervisor
    supervisor.pipeline = build_pipeline_with_hush(h.gateway, supervisor)
    assert supervisor.pipeline.names == [
        "identify", "access", "addressed", "hush", "command", "media", "pending", "route", "run",
    ]  # fmt: skip

    assert await h.say("psst, the build is red") == [], "hushed: nothing said, the model never asked"
    assert await h.say("/whoami psst") == [], "hush comes before command: the command never runs"
    group = ChatKey(channel="console", chat_id="group")
    await h.say("psst in a group", chat=group, is_direct=False)  # addressed comes first: not meant for the bot
    assert await h.say("hello") == ["Hello there."], "everything else goes on to the run"

    assert supervisor.pipeline.outcomes == {"hush:ignored": 2, "addressed:ignored": 1, "run:handled": 1}
    for key in ("console:m1", "console:m2", "console:m3"):
        assert await h.gateway.store.event_status(key) == "done"
