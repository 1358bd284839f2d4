"""Train the built-ins' meaning head (chat / react / plan over sentence vectors) and write its artefact.

The character n-gram classifier (``scripts/train_router.py``) knows the languages of its corpus (English and
Chinese); a Spanish, German, Russian or French message is a string of unknown n-grams to it. The encoder
(:mod:`bot.routing.encoder`) puts sentences of 16 languages into one space, so a linear softmax over its vectors,
trained on the same corpus, carries over to those languages. This script encodes every corpus message (its
request, as the router does: :func:`bot.routing.request.request_of`), runs a stratified 5-fold
cross-validation, fits a temperature to the out-of-fold logits, fits the final head on all of it and writes
``bot/routing/model/meaning-v1.json`` (3 × 512 weights and 3 biases as base64 float32, 8 KB), and the corpus's
vectors, int8 per row with the row's scale, with their labels, as ``bot/routing/model/corpus-v1.npz`` (1.9 MB):
the router measures how close a message is to known chat, tool and plan requests, and how unusual a closeness to
an agent is next to everyday messages, against them (:class:`bot.routing.meaning.Corpus`).

    python scripts/train_meaning.py            # CV + train + write
    python scripts/train_meaning.py --no-write # CV only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.routing.classifier import encode_array  # noqa: E402
from bot.routing.encoder import UseEncoder  # noqa: E402
from bot.routing.meaning import CORPUS_PATH, HEAD_FORMAT, HEAD_PATH, SCALE  # noqa: E402
from bot.routing.request import request_of  # noqa: E402

LABELS = ("chat", "react", "plan")
CORPUS_DIR = ROOT / "bot" / "routing" / "corpus"


def train(x: Any, y: Any, l2: float, steps: int = 400, rate: float = 2.0) -> tuple[Any, Any]:
    """Full-batch gradient descent on the softmax loss with L2 (deterministic)."""
    n, d = x.shape
    w, b = np.zeros((d, len(LABELS))), np.zeros(len(LABELS))
    target = np.eye(len(LABELS))[y]
    for _ in range(steps):
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - target) / n
        w -= rate * (x.T @ g + l2 * w)
        b -= rate * g.sum(axis=0)
    return w, b


def nll(logits: Any, y: Any, t: float) -> float:
    z = logits / t
    z = z - z.max(axis=1, keepdims=True)
    return float(-(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(axis=1))).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    files = sorted(CORPUS_DIR.glob("*.tsv"))
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if "\t" in line and not line.startswith("#"):
                label, text = line.split("\t", 1)
                rows.append((LABELS.index(label.strip()), text.strip()))
    started = time.perf_counter()
    encoder = UseEncoder()
    texts = [request_of(t) for _, t in rows]
    unit = np.vstack([encoder.encode(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    x = unit * SCALE
    y = np.array([label for label, _ in rows])
    encoded_s = time.perf_counter() - started
    folds = np.random.RandomState(13).permutation(len(rows)) % 5
    out_of_fold = np.zeros((len(rows), len(LABELS)))
    for k in range(5):
        w, b = train(x[folds != k], y[folds != k], args.l2)
        out_of_fold[folds == k] = x[folds == k] @ w + b
    temperature = min((nll(out_of_fold, y, t), t) for t in np.arange(0.5, 3.01, 0.05))[1]
    predicted = out_of_fold.argmax(axis=1)
    report: dict[str, Any] = {
        "messages": len(rows),
        "encode_s": round(encoded_s, 1),
        "cv_accuracy": round(float((predicted == y).mean()), 4),
        "cv_per_class": {lab: round(float((predicted[y == i] == i).mean()), 4) for i, lab in enumerate(LABELS)},
        "temperature": round(float(temperature), 2),
    }
    w, b = train(x, y, args.l2)
    w, b = w / temperature, b / temperature
    artefact = {
        "format": HEAD_FORMAT,
        "encoder": encoder.name,
        "labels": list(LABELS),
        "scale": SCALE,
        "corpus_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest(),
        "cv_accuracy": report["cv_accuracy"],
        "weights": encode_array(w.T.ravel().tolist()),
        "bias": [round(float(v), 6) for v in b],
    }
    if not args.no_write:
        HEAD_PATH.write_text(json.dumps(artefact, indent=1) + "\n", encoding="utf-8")
        scale = np.abs(unit).max(axis=1)
        quantised = np.round(unit / scale[:, None] * 127).astype(np.int8)
        np.savez_compressed(CORPUS_PATH, vectors=quantised, scale=scale.astype(np.float32), labels=y.astype(np.uint8))
        report["written"] = str(HEAD_PATH.relative_to(ROOT))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
