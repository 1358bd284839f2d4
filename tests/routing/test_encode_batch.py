"""The messages routed in one loop turn are encoded in one call of the (real) encoder, and each gets the decision
it gets alone; an encoder that fails fails every message of its batch, and a cancelled one leaves the others."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.models.offline import OfflineModel
from agents.spec import load_agents
from bot.config.settings import RoutingSection
from bot.routing import Router, targets_from
from bot.routing.batch import EncodeBatch
from bot.routing.offline import Meaning

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "routing" / "dev" / "agents-examples"
LOAD_S = 300
RULE = RoutingSection.model_validate({})
MESSAGES = [
    "my app dies when I click save",
    "¿Cómo se dice 'buenos días' en alemán?",
    "我的查询太慢了，帮我优化这个 SQL",
    "what's a good opening against the Sicilian?",
    "I think I caught a stomach bug",
    "plan the steps to move our blog to a new host",
]


@pytest.fixture(scope="module")
def meaning() -> Meaning:
    found = Meaning.start("use")
    assert found.wait(LOAD_S), found.state
    return found


def _router(meaning: Meaning) -> Router:
    builtin = load_agents(ROOT / "bot" / "defaults" / "agents", ROOT / "no-user", [])
    files = load_agents(ROOT / "no-builtins", ROOT / "no-user", [EXAMPLES])
    router = Router(targets_from([*builtin.specs.values(), *files.specs.values()]), OfflineModel(), meaning=meaning)
    assert router.prepare(LOAD_S)
    return router


async def test_messages_of_one_turn_share_one_encoding_and_keep_their_decisions(meaning: Meaning) -> None:
    router = _router(meaning)
    alone = [(await router.decide(text, RULE, "rule")).agent for text in MESSAGES]
    batch = meaning.batch
    assert batch is not None
    calls = batch.calls
    together = await asyncio.gather(*(router.decide(text, RULE, "rule") for text in MESSAGES))
    assert [d.agent for d in together] == alone
    assert batch.calls - calls == 1, "six messages routed at once: one call of the encoder"
    assert "debugger" in alone and "translator" in alone and "sql-helper" in alone


class Counting:
    """An encoder that counts its calls and may fail (the real one never fails this way)."""

    name = "counting"

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[int] = []
        self.fail = fail

    def encode(self, texts: Sequence[str]) -> Any:
        self.batches.append(len(texts))
        if self.fail:
            raise RuntimeError("encoder broke")
        return [[float(len(t))] for t in texts]


async def test_a_full_batch_goes_at_once_and_the_rest_at_the_turns_end() -> None:
    encoder = Counting()
    batch = EncodeBatch(encoder, max_batch=4)
    vectors = await asyncio.gather(*(batch.vector("x" * n) for n in range(1, 7)))
    assert encoder.batches == [4, 2] and [v[0] for v in vectors] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


async def test_a_failure_reaches_every_message_of_the_batch_and_a_cancelled_one_is_skipped() -> None:
    batch = EncodeBatch(Counting(fail=True))
    first, second = batch.vector("a"), batch.vector("b")
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert [str(r) for r in results] == ["encoder broke", "encoder broke"]
    batch = EncodeBatch(Counting())
    gone, kept = batch.vector("a"), batch.vector("bb")
    gone.cancel()
    assert await kept == [2.0]


def test_a_batch_of_vectors_stands_where_each_stands_alone(meaning: Meaning) -> None:
    """:meth:`Space.evidence_many` (one matrix product for the batch) gives each message the evidence
    :meth:`Space.evidence` gives it alone: the same agents, utterances and numbers (to float32 rounding)."""
    for router in (_router(meaning), Router([], OfflineModel(), meaning=meaning)):
        router.prepare(LOAD_S)
        assert router.view is not None
        space = router.view.space()
        encoder = meaning.loader.get()
        assert space is not None and encoder is not None
        vectors = encoder.encode(MESSAGES)
        for vector, many in zip(vectors, space.evidence_many(vectors), strict=True):
            alone = space.evidence(vector)
            assert many.head == pytest.approx(alone.head, abs=1e-5)
            assert many.builtin_z == pytest.approx(alone.builtin_z, abs=1e-4)
            assert many.nearest == pytest.approx(alone.nearest, abs=1e-5)
            assert [(a.name, a.utterance) for a in many.agents] == [(a.name, a.utterance) for a in alone.agents]
            for a, b in zip(many.agents, alone.agents, strict=True):
                assert (a.closeness, a.z, a.p99, a.neighbours) == pytest.approx(
                    (b.closeness, b.z, b.p99, b.neighbours), abs=1e-4
                )


class Rows:
    """An encoder of numpy rows (each text's length), as :class:`Encoder` promises."""

    name = "rows"

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray([[float(len(t))] for t in texts], dtype=np.float32)


class Place:
    """A space that records the batches it placed (and may fail)."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[float]] = []
        self.fail = fail

    def evidence_many(self, vectors: Any) -> list[str]:
        self.batches.append([float(v[0]) for v in vectors])
        if self.fail:
            raise RuntimeError("space broke")
        return [f"near {v[0]:g}" for v in vectors]


async def test_each_space_places_its_requests_of_a_batch_at_once() -> None:
    batch = EncodeBatch(Rows())
    one, other, broken = Place(), Place(), Place(fail=True)
    results = await asyncio.gather(
        batch.placed("a", one),
        batch.vector("bb"),
        batch.placed("ccc", other),
        batch.placed("dddd", one),
        batch.placed("eeeee", broken),
        return_exceptions=True,
    )
    assert one.batches == [[1.0, 4.0]] and other.batches == [[3.0]] and broken.batches == [[5.0]]
    assert [(float(r[0][0]), r[1]) for r in (results[0], results[2], results[3])] == [
        (1.0, "near 1"),
        (3.0, "near 3"),
        (4.0, "near 4"),
    ]
    assert float(results[1][0]) == 2.0 and str(results[4]) == "space broke"
