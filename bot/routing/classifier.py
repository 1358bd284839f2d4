"""A small learned router: ``chat``, ``react`` or ``plan`` for a user message.

Why this design:

* **Character n-grams + word n-grams.**  Messages arrive in English, Chinese and a mix of both, with typos,
  code in backticks and no spaces between Chinese words.  Character n-grams need no tokeniser and survive
  typos: 1-4 inside CJK runs (padded with a space so a run's edges show), 2-5 inside each token of the
  other text, a word or a run of punctuation (padded the same way, so word starts and ends show).  Word
  unigrams and bigrams add phrase evidence ("what does", "in that order"), and one *junction* feature per
  token boundary (last two characters, a space, first two characters) keeps a little cross-word context.
  Text is NFKC-normalised (full-width ``？`` becomes ``?``) and lower-cased, and digits all become ``0``
  ("5 pm" = "7 pm").  Only the first ``max_chars`` characters are read, so any input costs bounded,
  linear time.
* **Linear softmax model.**  Multinomial logistic regression with L2 (it beat complement Naive Bayes in
  5-fold cross-validation, see ``scripts/train_router.py``).  A feature's value is count × idf / sqrt(number
  of known feature occurrences in the message); idf is folded into the stored weights, and unknown n-grams
  are ignored rather than diluting short messages.  Probabilities are calibrated by one temperature, fitted
  on out-of-fold predictions and folded into the weights too.  A softmax over three labels only depends on
  two logit differences, so each feature stores the ``react`` and ``plan`` logits relative to ``chat``.
* **Pure Python, fast.**  The two weights of a feature are packed into one ``complex``, so a whole batch of
  n-grams is scored by C-level ``map(dict.get, ...)`` plus one ``sum``; n-grams are built by C-level string
  concatenation.  The n-grams of frequent tokens are pre-summed into a token cache shipped in the artefact
  (tokens met later are added to it, up to a cap), so an English message costs a few dict lookups per
  word.  A cached token also holds its word unigram weight and the junctions and word bigrams it starts,
  keyed by what follows it, so those features are looked up without building and hashing their strings (see
  bench/README.md, "Per-message micro-optimisations").
  No numpy, nothing to compile.
* **Compact artefact.**  Feature strings are one newline-joined string and the weights a base64 float
  array inside a small JSON document: loading is one ``json.loads``, one ``split`` and one ``dict(zip())``
  per table.

``featurise`` is the plain reference featuriser used by training; ``IntentClassifier.logits`` must agree with
it (a test checks that).
"""

from __future__ import annotations

import base64
import json
import math
import re
import sys
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, pairwise
from operator import add
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_PATH", "FeatureSettings", "IntentClassifier", "Prediction", "featurise"]

DEFAULT_PATH = Path(__file__).with_name("model") / "router-v1.json"
FORMAT = "intent-router/1"
_CJK_CLASS = "\u2e80-\u2fff\u3001-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\w+|[^\w\s]+")  # words, and runs of punctuation as tokens of their own
_LOWER_ASCII_TOKEN = re.compile(r"[a-z0-9_]+|[^a-z0-9_\s]+")
"""``_TOKEN`` for lower-case ASCII text, by explicit classes (quicker: see bench/README.md)."""
_DIGIT = re.compile("[1-9]")
_ASCII_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ123456789", b"abcdefghijklmnopqrstuvwxyz000000000")
"""``str.lower`` and ``_DIGIT.sub("0", ...)`` of ASCII text as one ``bytes.translate`` table."""
WORD_MARK = "\x01"
"""Prefix that keeps word features apart from character n-grams in ``featurise`` output."""
TOKEN_CACHE_CAP = 50_000
"""Tokens the scorer may memoise at run time beyond the shipped cache (bounds memory on hostile input)."""
_MEMO_MAX_LEN = 24
"""Longer tokens (URLs, hashes, junk) are rarely seen twice: scoring them is not worth remembering."""


@dataclass(frozen=True)
class FeatureSettings:
    cjk: tuple[int, int] = (1, 4)
    other: tuple[int, int] = (2, 5)
    words: tuple[int, int] = (1, 2)
    junction: int = 2
    """Characters taken from each side of a token boundary for the junction feature (0: none)."""
    max_chars: int = 2000
    digits: bool = True
    """Map every digit to ``0``."""

    def __post_init__(self) -> None:
        if self.other[0] < 2 or self.cjk[1] < 2 or self.words[0] < 1 or self.max_chars < 1:
            raise ValueError(f"unsupported feature settings: {self}")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FeatureSettings:
        return cls(
            cjk=(int(data["cjk"][0]), int(data["cjk"][1])),
            other=(int(data["other"][0]), int(data["other"][1])),
            words=(int(data["words"][0]), int(data["words"][1])),
            junction=int(data["junction"]),
            max_chars=int(data["max_chars"]),
            digits=bool(data["digits"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cjk": list(self.cjk),
            "other": list(self.other),
            "words": list(self.words),
            "junction": self.junction,
            "max_chars": self.max_chars,
            "digits": self.digits,
            "text": "NFKC, lower case; CJK runs and tokens (words, punctuation runs) are padded with one space",
            "value": "count * idf / sqrt(known feature occurrences); idf and temperature are in the weights",
        }


def segments(text: str, settings: FeatureSettings) -> tuple[list[str], list[str], list[str]]:
    """CJK runs, then tokens (words and punctuation runs) and ``\\w+`` words of the other text.

    Only the first ``max_chars`` characters are read.  Punctuation is split off words so that "schedule."
    and "schedule" share a token (and a cache entry); the junction feature still sees them side by side."""
    runs, rest = _normalised(text, settings)
    return runs, _TOKEN.findall(rest), _WORD.findall(rest)


def _normalised(text: str, settings: FeatureSettings) -> tuple[list[str], str]:
    """The CJK runs of the (prefix of the) normalised text, and the rest of it, each run replaced by a space."""
    limit = settings.max_chars
    norm = text[:limit]
    if norm.isascii():  # ASCII is already NFKC and has no CJK; the check is O(1)
        if settings.digits:  # lower case and digits in one C-level pass (bench/README.md)
            return [], norm.encode().translate(_ASCII_FOLD).decode()
        return [], norm.lower()
    # NFKC may lengthen text (one ligature becomes several letters), so cut again afterwards.
    norm = unicodedata.normalize("NFKC", norm)[:limit].lower()
    if settings.digits and _DIGIT.search(norm):  # most messages have no digit: skip the rewrite
        norm = _DIGIT.sub("0", norm)
    runs = [] if norm.isascii() else _CJK_RUN.findall(norm)
    return runs, (_CJK_RUN.sub(" ", norm) if runs else norm)


def _grams(text: str, lo: int, hi: int) -> Iterator[str]:
    for n in range(lo, hi + 1):
        for i in range(len(text) - n + 1):
            yield text[i : i + n]


def _cjk_grams(run: str, lo: int, hi: int) -> Iterator[str]:
    # Unigrams of the bare run (a lone pad space says nothing); longer grams see the run's edges.
    padded = f" {run} "
    for n in range(lo, hi + 1):
        yield from _grams(run if n == 1 else padded, n, n)


def featurise(text: str, settings: FeatureSettings | None = None) -> list[str]:
    """Every feature occurrence of ``text`` (word features carry ``WORD_MARK``); the reference for training."""
    s = settings or FeatureSettings()
    runs, tokens, words = segments(text, s)
    out: list[str] = []
    for run in runs:
        out.extend(_cjk_grams(run, *s.cjk))
    for token in tokens:
        out.extend(_grams(f" {token} ", *s.other))
    if s.junction:
        # A junction always has an inner space, so it cannot collide with an n-gram of one padded token.
        j = s.junction
        out.extend(f"{a[-j:]} {b[:j]}" for a, b in pairwise(tokens))
    for n in range(s.words[0], s.words[1] + 1):
        out.extend(WORD_MARK + " ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return out


def _lookup(text: str, lo: int, hi: int, get: Callable[[str], Any], extend: Callable[[Iterable[Any]], None]) -> None:
    """Look up the n-grams of ``text`` with ``lo <= n <= hi`` (``lo >= 2``) in C-level ``map`` calls.

    Each n-gram is an (n-1)-gram plus one character: concatenating costs about half of slicing with
    slice objects, and the order matches ``_grams``."""
    chars = list(text)  # one str object per character, shared by every level (CJK characters are not cached)
    prev: list[str] = chars
    for n in range(2, hi + 1):
        prev = list(map(add, prev, chars[n - 1 :]))
        if n >= lo:
            extend(map(get, prev))


_Entry = tuple[complex, int, complex | None, dict[str, complex], str, bool, dict[str, complex]]
"""A token's scoring entry: the sum of the weights of its character n-grams and how many of them the model knows;
its word unigram weight (None: unknown, or not a word); the weights of the junctions it starts, by the next
token's head; its head (its first ``junction`` characters); whether it is a word; the weights of the word bigrams it
starts, by the next word.  Looking a junction or bigram up by the next token's head or word makes no string."""
_NONE: dict[str, complex] = {}


def _after(table: dict[str, complex]) -> dict[str, dict[str, complex]]:
    """``table``'s features "a b" (one inner space: junctions, word bigrams) as ``{"a": {"b": weight}}``."""
    out: dict[str, dict[str, complex]] = {}
    for key, weight in table.items():
        first, space, second = key.partition(" ")
        if first and second and space and " " not in second:
            out.setdefault(first, {})[second] = weight
    return out


@dataclass(frozen=True)
class Prediction:
    label: str
    confidence: float
    """The top probability × 100."""
    scores: dict[str, float] = field(default_factory=dict)
    """Probability per label."""


def encode_array(values: Iterable[float] | Iterable[int], typecode: str = "f") -> str:
    """Little-endian ``array`` bytes, base64: the artefact's number encoding (used by training)."""
    packed = array(typecode, values)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def _decode(blob: str, typecode: str) -> array[Any]:
    values: array[Any] = array(typecode)
    values.frombytes(base64.b64decode(blob))
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _keys(part: dict[str, Any]) -> list[str]:
    return part["features"].split("\n") if part["features"] else []


def _pairs(part: dict[str, Any], typecode: str, count: int) -> Iterator[complex]:
    values = _decode(part["weights"], typecode)  # react, plan relative to chat, per feature
    if len(values) != 2 * count:
        raise ValueError("feature and weight counts differ")
    return map(complex, values[0::2], values[1::2])


class IntentClassifier:
    """Scores a message with the packaged linear model; see the module docstring for the why."""

    def __init__(self, data: dict[str, Any]) -> None:
        if data.get("format") != FORMAT:
            raise ValueError(f"not an {FORMAT} artefact: {data.get('format')!r}")
        self.meta = data
        self.version: str = data["version"]
        self.settings = s = FeatureSettings.from_json(data["features"])
        self._labels: tuple[str, ...] = tuple(data["labels"])
        if len(self._labels) != 3:
            raise ValueError("this scorer packs exactly three labels (two logits relative to the first)")
        tables = {}
        for name in ("chars", "words"):
            keys = _keys(data[name])
            tables[name] = dict(zip(keys, _pairs(data[name], "f", len(keys)), strict=True))
        self._chars: dict[str, complex] = tables["chars"]
        self._words: dict[str, complex] = tables["words"]
        cache = data.get("tokens") or {"features": "", "weights": "", "known": ""}
        keys = _keys(cache)
        sums = _pairs(cache, "d", len(keys))
        lo, hi = s.words
        self._unigrams, self._bigrams, self._longer = lo <= 1 <= hi, lo <= 2 <= hi, hi >= 3
        self._heads: dict[str, str] = {}
        self._junctions_after = _after(self._chars) if s.junction else {}
        self._bigrams_after = _after(self._words) if lo <= 2 <= hi else {}
        self._tokens: dict[str, _Entry] = {
            key: self._entry(key, chars, known)
            for key, chars, known in zip(keys, sums, _decode(cache["known"], "H"), strict=True)
        }
        self._token_cap = len(self._tokens) + TOKEN_CACHE_CAP
        self._bias = complex(*data["bias"])
        self._cjk_unigrams = s.cjk[0] <= 1
        self._cjk_range = (max(s.cjk[0], 2), s.cjk[1])

    @classmethod
    def load(cls, path: Path | None = None) -> IntentClassifier:
        return cls(json.loads((path or DEFAULT_PATH).read_bytes()))

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    def token_entry(self, token: str) -> tuple[complex, int]:
        """Sum of the weights of ``token``'s character n-grams, and how many of them the model knows."""
        values: list[complex | None] = []
        _lookup(f" {token} ", *self.settings.other, self._chars.get, values.extend)
        return sum(filter(None, values), 0j), len(values) - values.count(None)

    def _entry(self, token: str, chars: complex, known: int, *, kept: bool = True) -> _Entry:
        """What scoring needs of a token, worked out once (``kept``: for the cache): see ``_Entry``."""
        word = _WORD.fullmatch(token) is not None  # a token is either a word or a run of punctuation
        j = self.settings.junction
        head = token[:j]
        if kept:  # one head string shared by many tokens: less memory, and its hash is computed once
            head = self._heads.setdefault(head, head)
        return (
            chars,
            known,
            self._words.get(token) if word and self._unigrams else None,
            self._junctions_after.get(token[-j:], _NONE) if j else _NONE,
            head,
            word,
            self._bigrams_after.get(token, _NONE) if word else _NONE,
        )

    def logits(self, text: str) -> complex:
        """The react and plan logits relative to chat, as ``real + imag·j``."""
        runs, rest = _normalised(text, self.settings)
        values: list[complex | None] = []
        get = self._chars.get
        for run in runs:
            if self._cjk_unigrams:
                values += map(get, run)
            _lookup(f" {run} ", *self._cjk_range, get, values.extend)
        tokens = (_LOWER_ASCII_TOKEN if rest.isascii() else _TOKEN).findall(rest)  # ``rest`` is lower case
        if not tokens:  # no token, no word
            known = len(values) - values.count(None)
            return sum(filter(None, values), 0j) / math.sqrt(known) + self._bias if known else self._bias
        hits = list(map(self._tokens.get, tokens))
        if None in hits:
            hits = [hit if hit is not None else self._remember(token) for hit, token in zip(hits, tokens, strict=True)]
        sums, counts, unigrams, junctions, heads, word, bigrams = zip(*hits, strict=True)
        # The features in the reference order (``featurise``): junctions, then word unigrams and bigrams.
        if self.settings.junction:  # "ab cd": a token's tail, a space, the next token's head
            values += map(dict.get, junctions, heads[1:])
        values += unigrams  # None for punctuation (like an unknown word: neither evidence nor counted)
        if self._bigrams or self._longer:
            words = list(compress(tokens, word))
            if self._bigrams:
                values += map(dict.get, compress(bigrams, word), words[1:])
            if self._longer:
                get = self._words.get
                for n in range(max(3, self.settings.words[0]), self.settings.words[1] + 1):
                    values += map(get, map(" ".join, zip(*(words[i:] for i in range(n)), strict=False)))
        # Unknown features are None: they count neither as evidence nor towards the length normalisation.
        known = sum(counts) + len(values) - values.count(None)
        if not known:
            return self._bias
        return (sum(sums, 0j) + sum(filter(None, values), 0j)) / math.sqrt(known) + self._bias

    def _remember(self, token: str) -> _Entry:
        kept = len(token) <= _MEMO_MAX_LEN and len(self._tokens) < self._token_cap
        entry = self._entry(token, *self.token_entry(token), kept=kept)
        if kept:
            self._tokens[token] = entry
        return entry

    def predict(self, text: str) -> Prediction:
        best, p0, p1, p2 = self.probabilities(text)
        labels = self._labels
        return Prediction(labels[best], (p0, p1, p2)[best] * 100.0, {labels[0]: p0, labels[1]: p1, labels[2]: p2})

    def probabilities(self, text: str) -> tuple[int, float, float, float]:
        """The index of the most probable label, and each label's probability: ``predict`` without its objects
        (the router's path; see bench/README.md)."""
        z = self.logits(text)
        a, b = z.real, z.imag
        top = max(0.0, a, b)  # subtract the largest logit so exp cannot overflow
        e0, e1, e2 = math.exp(-top), math.exp(a - top), math.exp(b - top)
        norm = e0 + e1 + e2
        p0, p1, p2 = e0 / norm, e1 / norm, e2 / norm
        return 0 if p0 >= p1 and p0 >= p2 else (1 if p1 >= p2 else 2), p0, p1, p2
