"""``answer: {similar: TEXT, threshold: T}``: the answer means what TEXT says, by the cosine similarity of the two
under the offline sentence encoder routing uses (:mod:`bot.routing.encoder`, the multilingual Universal Sentence
Encoder): the process's one copy (:meth:`EncoderLoader.shared`, the one the trial's router waited for), never a
second.  The encoder reads 300 characters at a time, so a longer answer is read in pieces (at most
:data:`MAX_PIECES`) whose vectors are averaged.  An encoder that cannot load makes the check an error, never a pass.

:data:`DEFAULT_THRESHOLD` was measured (2026-12) on 12 paraphrase pairs (0.56–0.95, median 0.72) and 12 pairs
that differ in meaning (unrelated 0.0–0.03; same topic, other meaning 0.32–0.60, one at 0.78: "notes.txt does not
exist" / "notes.txt contains hello"): 0.65 passes 10 of the 12 paraphrases and 1 of the 12 others.  It tells
topic and gist, not negation or a changed number: keep ``contains`` or a ``judge`` for those.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from bot.evals.results import CheckResult

DEFAULT_THRESHOLD = 0.65
ENCODER_WAIT_S = 120.0
MAX_PIECES = 16
"""The most 300-character pieces of an answer read (4,800 characters)."""
PIECE_CHARS = 300


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut between words where it can be."""
    text = " ".join(text.split())
    out: list[str] = []
    while text and len(out) < MAX_PIECES:
        if len(text) <= size:
            out.append(text)
            break
        cut = text.rfind(" ", 0, size + 1)
        cut = cut if cut > size // 2 else size
        out.append(text[:cut])
        text = text[cut:].lstrip()
    return out or [""]


def _vector(encoder: Any, text: str) -> Any:
    import numpy as np

    vectors = np.asarray(encoder.encode(pieces(text)), dtype=np.float32)
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else mean


def similarity(encoder: Any, a: str, b: str) -> float:
    """The cosine similarity of ``a`` and ``b`` (−1 to 1)."""
    import numpy as np

    return float(np.dot(_vector(encoder, a), _vector(encoder, b)))


async def encoder_for(name: str, wait_s: float = ENCODER_WAIT_S) -> tuple[Any, str | None]:
    """The process's encoder ``name`` (waited for on a thread), or None and why not."""
    from bot.routing.encoder import EncoderLoader

    loader = EncoderLoader.shared(name)
    encoder = await asyncio.to_thread(loader.wait, wait_s)
    if encoder is not None:
        return encoder, None
    why = loader.error if loader.done else f"not loaded within {wait_s:g} s"
    return None, f"the sentence encoder {name!r} could not be used ({why})"


async def similar_checks(texts: list[str], threshold: float | None, answer: str, encoder: str) -> list[CheckResult]:
    """One check per text: the answer's similarity to it reaches ``threshold``."""
    if not texts:
        return []
    least = DEFAULT_THRESHOLD if threshold is None else threshold
    expected = [f"similar to {_quoted(t)} ≥ {least:g}" for t in texts]
    found, why = await encoder_for(encoder)
    if found is None:
        return [
            CheckResult(check="answer", expected=e, passed=False, seen=f"error: {why}", error=True) for e in expected
        ]
    if not answer.strip():
        return [CheckResult(check="answer", expected=e, passed=False, seen="no answer") for e in expected]
    scores = await asyncio.to_thread(lambda: [similarity(found, answer, t) for t in texts])
    said = _quoted(answer, 200)
    return [
        CheckResult(
            check="answer",
            expected=e,
            passed=s >= least,
            seen=f"similarity {s:.3f} (threshold {least:g})" + ("" if s >= least else f" of the answer {said}"),
        )
        for e, s in zip(expected, scores, strict=True)
    ]


def _quoted(text: str, limit: int = 80) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
