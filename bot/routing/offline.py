"""Routing by meaning without a model: the encoder, the corpus, the judge, and the corrections admins made.

:class:`Meaning` is what the router needs of them, built once per process (the encoder loads on a thread, see
:mod:`bot.routing.encoder`); :class:`MeaningView` is one set of agents (and corrections) placed in the space.
A router without a :class:`Meaning`, or whose encoder is still loading, decides by triggers and the classifier
alone (:meth:`bot.routing.Router.by_rules`).
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.routing.batch import EncodeBatch
from bot.routing.encoder import Encoder, EncoderLoader
from bot.routing.judge import Judge
from bot.routing.meaning import AgentBank, BuiltinHead, Corpus, Space
from bot.runs.catalog import RouteTarget

if TYPE_CHECKING:
    from bot.config.settings import RuleRouting

log = logging.getLogger(__name__)

CORRECTION_MATCH = 0.85
"""A message this close (cosine) to a correction goes where the correction says, whatever else the evidence is."""
BUILTIN_SURE = 0.95
"""Without file agents, the meaning head is consulted only when the classifier's top share is below this (the
encoder is the costly part, see bench/README.md, "The sentence encoder"; a plain English or Chinese request does not
need it)."""


def normalised(text: str) -> str:
    """A message as corrections compare it without the encoder: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class Correction:
    """An admin's "this message was for that agent" (``/route AGENT`` after a wrong route)."""

    id: str
    agent: str
    text: str
    actor: str = ""
    at: str = ""

    @classmethod
    def from_setting(cls, key: str, value: Mapping[str, Any]) -> Correction:
        return cls(
            key,
            str(value.get("agent", "")),
            str(value.get("text", "")),
            str(value.get("actor", "")),
            str(value.get("at", "")),
        )


class Meaning:
    """The process's encoder, corpus vectors, meaning head and judge."""

    def __init__(
        self,
        loader: EncoderLoader,
        corpus: Corpus | None = None,
        head: BuiltinHead | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.loader = loader
        self._batch: EncodeBatch | None = None
        self.corpus = corpus or Corpus.load()
        self.head = head or BuiltinHead.load()
        self.judge = judge or Judge.load()

    @classmethod
    def start(cls, encoder: str = "use") -> Meaning:
        """Start loading ``encoder`` (shared by every router of the process) and read the shipped artefacts."""
        return cls(EncoderLoader.shared(encoder))

    @property
    def encoder(self) -> Encoder | None:
        return self.loader.get()

    @property
    def batch(self) -> EncodeBatch | None:
        """The messages' encoder, batching the requests of one loop turn (None while the encoder loads)."""
        encoder = self.loader.get()
        if encoder is None:
            return None
        if self._batch is None or self._batch.encoder is not encoder:
            self._batch = EncodeBatch(encoder)
        return self._batch

    @property
    def state(self) -> str:
        """``ready``, ``loading`` or ``failed: …`` (shown by ``bot route --json`` and ``/routing``)."""
        if self.loader.get() is not None:
            return "ready"
        return f"failed: {self.loader.error}" if self.loader.done else "loading"

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the encoder is loaded (the command line and evaluations; never the gateway's loop)."""
        return self.loader.wait(timeout_s) is not None


def start_meaning(rule: RuleRouting) -> Meaning | None:
    """The process's :class:`Meaning` when ``routing.rule.meaning`` is on (its encoder starts loading on a
    thread), else None; a missing artefact or package turns it off with a warning instead of stopping the bot."""
    if not (rule.meaning and rule.learned):  # without the classifier (rule.learned: false) routing is by keywords
        return None
    try:
        return Meaning.start(rule.encoder)
    except Exception as exc:  # numpy or an artefact missing: routing by triggers and the classifier still works
        log.warning("routing by meaning is off: %s: %s", type(exc).__name__, exc)
        return None


class MeaningView:
    """A set of agents and corrections placed in the space; rebuilt (lazily, once the encoder is ready) when
    either changes."""

    def __init__(self, meaning: Meaning, targets: Sequence[RouteTarget], builtins: set[str]) -> None:
        self.meaning = meaning
        self.agents = [t for t in targets if t.name not in builtins]
        self.known = {t.name for t in targets}
        self.corrections: list[Correction] = []
        self._space: Space | None = None
        self._correction_vectors: Any = None
        self._building = False
        self._lock = threading.Lock()

    def set_corrections(self, corrections: Sequence[Correction]) -> None:
        kept = [c for c in corrections if c.agent in self.known and c.text.strip()]
        if kept == self.corrections:
            return
        with self._lock:
            self.corrections = kept
            self._space = None  # the file agents' corrections are utterances of theirs: placed again

    def space(self) -> Space | None:
        """The agents in the space, or None while the encoder loads or while they are being placed (on a thread:
        encoding the agents' utterances and measuring the background costs tens of milliseconds, which the event
        loop does not wait for; the triggers and the classifier decide meanwhile)."""
        space = self._space
        if space is not None or self.meaning.encoder is None:
            return space
        with self._lock:
            if not self._building:
                self._building = True
                threading.Thread(target=self.build, name="routing-space", daemon=True).start()
        return None

    def build(self) -> Space | None:
        """Place the agents and corrections now (blocking; None while the encoder loads)."""
        encoder = self.meaning.encoder
        if encoder is None:
            return None
        while True:
            corrections = self.corrections
            learned: dict[str, list[str]] = {}
            for c in corrections:
                learned.setdefault(c.agent, []).append(c.text)
            try:
                space = Space(AgentBank(encoder, self.agents, learned), self.meaning.corpus, self.meaning.head)
                vectors = encoder.encode([c.text for c in corrections])
            except Exception:
                log.exception("placing the agents in the routing space failed; routing by triggers meanwhile")
                with self._lock:
                    self._building = False
                return None
            with self._lock:
                if corrections is not self.corrections:  # changed while placing: again, with the new ones
                    continue
                self._space, self._correction_vectors, self._building = space, vectors, False
                return space

    def correction_near(self, vector: Any) -> tuple[Correction, float] | None:
        """The correction closest to ``vector`` when it is within :data:`CORRECTION_MATCH`."""
        if not self.corrections or self._correction_vectors is None or len(self._correction_vectors) == 0:
            return None
        cosines = self._correction_vectors @ vector
        best = int(cosines.argmax())
        score = float(cosines[best])
        return (self.corrections[best], score) if score >= CORRECTION_MATCH else None
