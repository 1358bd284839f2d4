"""Word forms: a trigger keyword matches its inflections ("crashes", "errors", "bugs" for crash, error, bug).

Snowball stemmers (``snowballstemmer``, pure Python) for the Latin and Cyrillic languages the bot meets most:
English, Spanish, German, French, Italian, Portuguese and Russian. A keyword and a message word match when
some language's stemmer gives them the same stem ("errores" and "error" in Spanish, "Fehlern" and "Fehler" in
German, "ошибки" and "ошибка" in Russian). CJK keywords keep matching as substrings (no inflection there).

Stemming is slow in pure Python (see bench/README.md), so only words that could match are stemmed (their first
three letters open some keyword's stem) and each word's stems are remembered (up to :data:`MEMO_CAP` words).
"""

from __future__ import annotations

from collections.abc import Container, Iterable

import snowballstemmer

LATIN = ("english", "spanish", "german", "french", "italian", "portuguese")
CYRILLIC = ("russian",)
MEMO_CAP = 50_000
PREFIX = 3
"""Letters of a word that must open some keyword's stem before the word is stemmed at all."""
_MIN_LEN = 3


class WordForms:
    """The stems of words in every language that fits their script, remembered."""

    def __init__(self) -> None:
        self._stemmers = {name: snowballstemmer.stemmer(name) for name in (*LATIN, *CYRILLIC)}
        self._memo: dict[str, frozenset[tuple[str, str]]] = {}

    def stems(self, word: str) -> frozenset[tuple[str, str]]:
        """``(language, stem)`` of a lower-case word, for each language of its script (none for other scripts)."""
        hit = self._memo.get(word)
        if hit is not None:
            return hit
        if len(word) < _MIN_LEN or not word.isalpha():
            found: frozenset[tuple[str, str]] = frozenset()
        else:
            languages = (
                CYRILLIC if "\u0400" <= word[0] <= "\u04ff" else LATIN if word[0].isascii() or _latin(word) else ()
            )
            found = frozenset((lang, self._stemmers[lang].stemWord(word)) for lang in languages)
        if len(self._memo) < MEMO_CAP:
            self._memo[word] = found
        return found


def _latin(word: str) -> bool:
    return all(c.isascii() or "\u00c0" <= c <= "\u024f" for c in word)


FORMS = WordForms()
"""The process's stemmers and memo (shared by every router: stems do not change)."""


class StemIndex:
    """Single-word keywords by stem, to find the ones a message's words inflect."""

    def __init__(self, keywords: Iterable[tuple[str, int, str]]) -> None:
        """``keywords``: (folded keyword, agent index, keyword as written)."""
        self._by_stem: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self._prefixes: set[str] = set()
        for folded, index, written in keywords:
            for key in FORMS.stems(folded):
                self._by_stem.setdefault(key, []).append((index, written))
                self._prefixes.add(key[1][:PREFIX])

    def __bool__(self) -> bool:
        return bool(self._by_stem)

    def hits(self, tokens: Iterable[str], exact: Container[str]) -> list[tuple[int, str]]:
        """(agent index, keyword) for each keyword some token inflects (tokens in ``exact`` matched already)."""
        out: list[tuple[int, str]] = []
        prefixes, by_stem = self._prefixes, self._by_stem
        for token in tokens:
            if token in exact or token[:PREFIX] not in prefixes:
                continue
            seen: set[tuple[int, str]] = set()
            for key in FORMS.stems(token):
                for entry in by_stem.get(key, ()):
                    if entry not in seen:
                        seen.add(entry)
                        out.append(entry)
        return out
