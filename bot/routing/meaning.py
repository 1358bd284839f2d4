"""What a message means, as the router needs it: how close it is to each agent, and which built-in it is.

Three parts, all over the sentence vectors of :mod:`bot.routing.encoder`:

* :class:`BuiltinHead`: chat / react / plan as a linear softmax over the vector, trained on the classifier's
  corpus by ``scripts/train_meaning.py`` (5-fold CV in its artefact). Because the encoder puts 16 languages
  in one space, it knows a Spanish or Russian request the character n-gram classifier has never seen.
* :class:`AgentBank`: each agent's *utterances* (its description, title, ``examples:``, its keywords as one
  phrase, and the corrections admins made), encoded once; a message's closeness to an agent is its highest
  cosine with one of them, and the utterance that gave it is kept to show why.
* :class:`Corpus`: the classifier's 4,497 labelled messages as vectors (shipped, 1.9 MB). Every fifth is a
  *background* of everyday messages: how close they come to an agent says how unusual a message's closeness to it
  is (a z-score: an agent known by a one-line description and one known by ten examples compare alike). The rest
  are *neighbours*: how close a message comes to known chat, tool and plan requests, and what its nearest
  neighbours' closeness to an agent is (a debugging question's neighbours are programming questions, close to a
  debugger; "I caught a stomach bug"'s are health questions, far from it).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bot.routing.encoder import Encoder
from bot.runs.catalog import RouteTarget

HEAD_FORMAT = "meaning-head/1"
HEAD_PATH = Path(__file__).with_name("model") / "meaning-v1.json"
CORPUS_PATH = Path(__file__).with_name("model") / "corpus-v1.npz"
BACKGROUND_EVERY = 5
"""Every fifth corpus message is background (z-scores); the others are neighbours."""
NEIGHBOURS = 10
NEIGHBOUR_EVERY = 2
SCALE = 10.0
"""Unit vectors are scaled by this before the head (its weights were trained on the scaled vectors)."""


class BuiltinHead:
    """chat / react / plan probabilities of a sentence vector."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        if data.get("format") != HEAD_FORMAT:
            raise ValueError(f"not a {HEAD_FORMAT} artefact: {data.get('format')!r}")
        self.labels: tuple[str, ...] = tuple(data["labels"])
        self.encoder: str = data["encoder"]
        raw: array[float] = array("f")
        raw.frombytes(base64.b64decode(data["weights"]))
        if sys.byteorder != "little":
            raw.byteswap()
        self._w = np.asarray(raw, dtype=np.float32).reshape(len(self.labels), -1) * float(data["scale"])
        self._b = np.asarray(data["bias"], dtype=np.float32)

    @classmethod
    def load(cls, path: Path | None = None) -> BuiltinHead:
        return cls(json.loads((path or HEAD_PATH).read_text(encoding="utf-8")))

    def probabilities(self, vector: Any) -> tuple[float, ...]:
        z = self._w @ vector + self._b
        e = np.exp(z - z.max())
        return tuple(float(v) for v in e / e.sum())

    def probabilities_many(self, vectors: Any) -> list[list[float]]:
        """:meth:`probabilities` of each row of ``vectors``."""
        z = vectors @ self._w.T + self._b
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).tolist()


@dataclass(frozen=True)
class Utterance:
    agent: int
    """The agent's index in the bank."""
    text: str
    kind: str
    """description, example, keywords or correction."""


def utterances(target: RouteTarget, learned: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(kind, text) of what ``target`` is for: its description (with its title), examples, keywords and the
    corrections admins made."""
    out: list[tuple[str, str]] = []
    if target.description:
        out.append(("description", target.description))
        if target.title and target.title.casefold() != target.name.casefold():
            out.append(("description", f"{target.title}: {target.description}"))
        out += [("description", request) for request in as_requests(target.description)]
    out += [("example", e) for e in target.examples]
    words = [k for k in target.keywords if k.strip()]
    if words:
        out.append(("keywords", ", ".join(words)))
    out += [("correction", text) for text in learned]
    if not out:  # nothing written about it: its name is all there is ("sql-helper" says something)
        out.append(("description", (target.title or target.name).replace("-", " ")))
    return out


_CLAUSE = re.compile(r"\s+[-–—]\s+|[;:.!?]\s+|\s*\n\s*")
_THIRD_PERSON = re.compile(r"^([A-Za-z]+?)(ies|es|s)\b")


def as_requests(description: str) -> list[str]:
    """The description's clauses as requests a person would send ("Translates texts between languages" →
    "translate texts between languages", "can you translate texts between languages?"): a message is nearer to
    a request than to a third-person description of one."""
    out: list[str] = []
    for clause in _CLAUSE.split(description.strip()):
        clause = clause.strip(" ,.")
        if len(clause) < 8:
            continue
        verb = _THIRD_PERSON.match(clause)
        if verb is not None:
            stem, ending = verb.group(1), verb.group(2)
            base = stem + ("y" if ending == "ies" else "e" if ending == "es" and not stem.endswith(_SIBILANT) else "")
            imperative = base.lower() + clause[verb.end() :]
            out += [imperative, f"can you {imperative}?"]
        elif clause != description.strip():
            out.append(clause)
    return out


_SIBILANT = ("s", "x", "z", "ch", "sh")


class AgentBank:
    """The agents' utterances as vectors; a message's closeness to each agent."""

    def __init__(
        self, encoder: Encoder, targets: Sequence[RouteTarget], learned: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        self.names = [t.name for t in targets]
        self.items: list[Utterance] = []
        for index, target in enumerate(targets):
            for kind, text in utterances(target, (learned or {}).get(target.name, ())):
                self.items.append(Utterance(index, text, kind))
        self.vectors = self._vectors = encoder.encode([u.text for u in self.items])
        self._owner = np.asarray([u.agent for u in self.items], dtype=np.int64)

        self._starts = np.searchsorted(self._owner, np.arange(len(self.names))) if self.items else self._owner

    def best_per_agent(self, vectors: Any) -> Any:
        """``(len(vectors), agents)``: each vector's highest cosine with one of each agent's utterances."""
        cosines = vectors @ self._vectors.T
        return np.maximum.reduceat(cosines, self._starts, axis=1)

    def closest(self, cosines: Any) -> tuple[Any, Any]:
        """For ``cosines`` ``(m, len(items))`` (vectors against every utterance): per vector and agent the highest
        cosine ``(m, agents)`` and the index of the utterance that gave it (the first such, as ``argmax``)."""
        best = np.maximum.reduceat(cosines, self._starts, axis=1)
        rows, cols = np.nonzero(cosines == best[:, self._owner])
        first = np.ones(len(cols), dtype=bool)
        np.not_equal(self._owner[cols[1:]], self._owner[cols[:-1]], out=first[1:])
        first[1:] |= rows[1:] != rows[:-1]
        return best, cols[first].reshape(best.shape)

    def closeness(self, vector: Any) -> list[tuple[float, Utterance | None]]:
        """Per agent (in order): the highest cosine of ``vector`` with one of its utterances, and that one."""
        if not self.items:
            return [(-1.0, None)] * len(self.names)
        cosines = self._vectors @ vector
        out: list[tuple[float, Utterance | None]] = []
        bounds = [*self._starts.tolist(), len(self.items)]
        for agent in range(len(self.names)):
            lo, hi = bounds[agent], bounds[agent + 1]
            best = lo + int(cosines[lo:hi].argmax())
            out.append((float(cosines[best]), self.items[best]))
        return out


class Corpus:
    """The shipped corpus vectors, split into background and neighbours (see the module docstring)."""

    def __init__(self, vectors: Any, labels: Any) -> None:
        index = np.arange(len(vectors))
        background = index % BACKGROUND_EVERY == 0
        self.background = vectors[background]
        kept = ~background & (index % NEIGHBOUR_EVERY == NEIGHBOUR_EVERY - 1)
        order = np.argsort(labels[kept], kind="stable")  # each label's neighbours in one slice
        self.neighbours = np.ascontiguousarray(vectors[kept][order])
        self.labels = labels[kept][order]
        self.slices = [
            (int(np.searchsorted(self.labels, k)), int(np.searchsorted(self.labels, k, side="right"))) for k in range(3)
        ]
        # How close everyday messages come to each built-in's nearest neighbour: the z-score's scale.
        cosines = self.background @ self.neighbours.T
        self.builtin_mean = np.zeros(3, dtype=np.float32)
        self.builtin_std = np.ones(3, dtype=np.float32)
        for label, (lo, hi) in enumerate(self.slices):
            best = cosines[:, lo:hi].max(axis=1)
            self.builtin_mean[label], self.builtin_std[label] = best.mean(), max(float(best.std()), 1e-3)

    @classmethod
    def load(cls, path: Path | None = None) -> Corpus:
        with np.load(path or CORPUS_PATH) as data:
            vectors = data["vectors"].astype(np.float32) * (data["scale"][:, None] / 127.0)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            return cls(vectors.astype(np.float32), data["labels"].astype(np.int64))


class AgentEvidence(NamedTuple):
    """How a message stands to one agent (a named tuple: forty are made a message, a third of a frozen
    dataclass's cost)."""

    name: str
    closeness: float
    """Its highest cosine with one of the agent's utterances."""
    z: float
    """That closeness in standard deviations above the background's (everyday messages')."""
    p99: float
    """The background's 99th percentile of closeness to the agent."""
    neighbours: float
    """The mean z of the message's nearest corpus neighbours (is it in the agent's part of the space?)."""
    utterance: Utterance | None


@dataclass(frozen=True)
class Evidence:
    """What the meaning says of a message: its built-in shares and where it stands to each agent."""

    head: tuple[float, ...]
    """chat, react, plan probabilities by the meaning head."""
    builtin_z: tuple[float, ...]
    """chat, react, plan: the message's closeness to its nearest corpus neighbour of each, as a z-score."""
    nearest: float
    """Its closeness to its nearest corpus neighbour."""
    agents: list[AgentEvidence]


class Space:
    """One set of agents placed in the encoder's space next to the corpus; :meth:`evidence` for a message."""

    def __init__(self, bank: AgentBank, corpus: Corpus, head: BuiltinHead) -> None:
        self.bank, self.corpus, self.head = bank, corpus, head
        n = len(bank.names)
        self._mean = np.zeros(n, dtype=np.float32)
        self._std = np.ones(n, dtype=np.float32)
        self._p99 = np.zeros(n, dtype=np.float32)
        self._neighbour_z = np.zeros((len(corpus.neighbours), n), dtype=np.float32)
        if n:
            self._place(bank)

    def _place(self, bank: AgentBank) -> None:
        background = bank.best_per_agent(self.corpus.background)
        self._mean = background.mean(axis=0)
        self._std = np.maximum(background.std(axis=0), 1e-3)
        self._p99 = np.percentile(background, 99, axis=0)
        self._neighbour_z = (bank.best_per_agent(self.corpus.neighbours) - self._mean) / self._std

    def evidence_many(self, vectors: Any) -> list[Evidence]:
        """:meth:`evidence` of each row of ``vectors`` ``(m, dim)``, in a few matrix products for all of them (the
        corpus and the utterances are read once, not once a message: bench/README.md, "The sentence encoder")."""
        corpus, bank, m = self.corpus, self.bank, len(vectors)
        cosines = vectors @ corpus.neighbours.T
        heads = self.head.probabilities_many(vectors)
        nearest_all = cosines.max(axis=1).tolist()
        builtin = np.empty((m, 3), dtype=np.float32)
        for label, (lo, hi) in enumerate(corpus.slices):
            builtin[:, label] = (cosines[:, lo:hi].max(axis=1) - corpus.builtin_mean[label]) / corpus.builtin_std[label]
        builtin_z = builtin.tolist()
        if not bank.names:
            return [Evidence(tuple(heads[i]), tuple(builtin_z[i]), nearest_all[i], []) for i in range(m)]
        nearest = np.argpartition(-cosines, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
        weights = np.maximum(np.take_along_axis(cosines, nearest, axis=1), 0) + 1e-6
        neighbour_z = np.einsum("mk,mka->ma", weights, self._neighbour_z[nearest]) / weights.sum(axis=1)[:, None]
        if bank.items:
            closeness, which = bank.closest(vectors @ bank.vectors.T)
        else:
            closeness, which = np.full((m, len(bank.names)), -1.0, dtype=np.float32), None
        z = ((closeness - self._mean) / self._std).tolist()
        p99, names, items = self._p99.tolist(), bank.names, bank.items
        out: list[Evidence] = []
        for i, (close, zs, nz) in enumerate(zip(closeness.tolist(), z, neighbour_z.tolist(), strict=True)):
            said = [items[k] for k in which[i].tolist()] if which is not None else [None] * len(names)
            agents = [
                AgentEvidence(name, c, zz, q, n, u)
                for name, c, zz, q, n, u in zip(names, close, zs, p99, nz, said, strict=True)
            ]
            out.append(Evidence(tuple(heads[i]), tuple(builtin_z[i]), nearest_all[i], agents))
        return out

    def evidence(self, vector: Any) -> Evidence:
        corpus = self.corpus
        cosines = corpus.neighbours @ vector
        builtin_z = tuple(
            float((cosines[lo:hi].max() - corpus.builtin_mean[label]) / corpus.builtin_std[label])
            for label, (lo, hi) in enumerate(corpus.slices)
        )
        agents: list[AgentEvidence] = []
        if self.bank.names:
            nearest = np.argpartition(-cosines, NEIGHBOURS)[:NEIGHBOURS]
            weights = np.maximum(cosines[nearest], 0) + 1e-6
            neighbour_z = (self._neighbour_z[nearest] * weights[:, None]).sum(axis=0) / weights.sum()
            for i, (closeness, utterance) in enumerate(self.bank.closeness(vector)):
                agents.append(
                    AgentEvidence(
                        name=self.bank.names[i],
                        closeness=closeness,
                        z=float((closeness - self._mean[i]) / self._std[i]),
                        p99=float(self._p99[i]),
                        neighbours=float(neighbour_z[i]),
                        utterance=utterance,
                    )
                )
        return Evidence(self.head.probabilities(vector), builtin_z, float(cosines.max()), agents)
