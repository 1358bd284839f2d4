"""Text for memory search: search terms and token estimates (what must not be remembered is
:func:`bot.redaction.secret_in`: the detector every stored row is redacted with). How the terms are stored and
matched (CJK grams, FTS5 and ``to_tsquery`` expressions) is :mod:`bot.store.fulltext`'s.
"""

from __future__ import annotations

import re

from bot.store.fulltext import CJK, grams

__all__ = ["CJK", "MAX_TERMS", "STOPWORDS", "WORD", "estimate_tokens", "grams", "query_terms"]

WORD = re.compile(r"[^\W_]{2,}|\d+", re.UNICODE)
MAX_TERMS = 32

STOPWORDS = frozenset(
    """a an and are as at be but by can could did do does for from had has have he her his how i if in into is it
    its me my of on or our she so that the their them then there these they this to us was we were what when where
    which who whom why will with would you your yours about also just like any some all been being do don't im i'm
    tell know remember please pls thanks thank ok okay yes no not""".split()
)
CJK_STOP = frozenset("的了吗呢吧啊是我你他她它们在有和就也都这那个么什")
_CJK_STOP_RUNS = re.compile(f"[{''.join(sorted(CJK_STOP))}]+")
_ASCII_WORD = re.compile(r"[a-z0-9]{2,}|[0-9]+")
"""``WORD`` on lower-cased ASCII text (where ``\\w`` is letters, digits and ``_``): same matches, no Unicode classes."""


def query_terms(text: str) -> list[str]:
    """What to search for: the words of ``text`` (lower-cased, no stop words) and its CJK pairs (single
    characters when a run has only one), at most :data:`MAX_TERMS`."""
    if text.isascii():  # most messages: no CJK run to cut out, and lower-casing keeps every offset
        return list(dict.fromkeys(w for w in _ASCII_WORD.findall(text.lower()) if w not in STOPWORDS))[:MAX_TERMS]
    terms: list[str] = []
    plain = CJK.sub(" ", text)
    terms.extend(w for w in (m.lower() for m in WORD.findall(plain)) if w not in STOPWORDS)
    for run in CJK.findall(text):
        # Particles and pronouns split a longer run (pairs never span them); a lone character left is a term.
        parts = _CJK_STOP_RUNS.split(run) if len(run) > 2 else [run]
        for part in parts:
            if len(part) == 1:
                terms.append(part)
            terms.extend(part[i : i + 2] for i in range(len(part) - 1))
    return list(dict.fromkeys(terms))[:MAX_TERMS]


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` costs: a CJK character is about one, other text about four characters."""
    cjk = sum(len(run) for run in CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4
