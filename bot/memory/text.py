"""Text for memory search: search terms, CJK grams and token estimates (what must not be remembered is
:func:`bot.redaction.secret_in`: the detector every stored row is redacted with).

Full-text search on both databases tokenises by words, and a run of Chinese or Japanese characters is one
word to it; SQLite's trigram tokenizer misses two-character words (``东京``). So every memory also stores its
CJK characters and character pairs (``grams``) and a query searches those: ``东京`` finds "我下周去东京".
"""

from __future__ import annotations

import re

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
WORD = re.compile(r"[^\W_]{2,}|\d+", re.UNICODE)
MAX_TERMS = 32

STOPWORDS = frozenset(
    """a an and are as at be but by can could did do does for from had has have he her his how i if in into is it
    its me my of on or our she so that the their them then there these they this to us was we were what when where
    which who whom why will with would you your yours about also just like any some all been being do don't im i'm
    tell know remember please pls thanks thank ok okay yes no not""".split()
)
CJK_STOP = frozenset("的了吗呢吧啊是我你他她它们在有和就也都这那个么什")


def grams(text: str) -> str:
    """The CJK characters and adjacent pairs of ``text``, space-separated (empty without CJK)."""
    out: list[str] = []
    for run in CJK.findall(text):
        out.extend(run)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(dict.fromkeys(out))


def query_terms(text: str) -> list[str]:
    """What to search for: the words of ``text`` (lower-cased, no stop words) and its CJK pairs (single
    characters when a run has only one), at most :data:`MAX_TERMS`."""
    terms: list[str] = []
    plain = CJK.sub(" ", text)
    terms.extend(w for w in (m.lower() for m in WORD.findall(plain)) if w not in STOPWORDS)
    for run in CJK.findall(text):
        # Particles and pronouns split a longer run (pairs never span them); a lone character left is a term.
        parts = re.split(f"[{''.join(CJK_STOP)}]+", run) if len(run) > 2 else [run]
        for part in parts:
            if len(part) == 1:
                terms.append(part)
            terms.extend(part[i : i + 2] for i in range(len(part) - 1))
    return list(dict.fromkeys(terms))[:MAX_TERMS]


def fts5_alternatives(terms: list[str]) -> str:
    """``terms`` as FTS5 alternatives (all made of word characters, quoted anyway)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def fts5_query(owner: str, terms: list[str]) -> str:
    """An FTS5 MATCH expression: the person's entries containing any of ``terms``."""
    return f"owner:{owner} AND ({fts5_alternatives(terms)})"


def owner_token(person: str) -> str:
    """The FTS5 token for a person: 'p' and the hex of its UTF-8 id, as the index triggers write it."""
    return "p" + person.encode().hex().lower()


def tsquery(terms: list[str]) -> str:
    """A PostgreSQL ``to_tsquery`` text: any of ``terms`` (word characters only, so nothing to escape)."""
    return " | ".join(terms)


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` costs: a CJK character is about one, other text about four characters."""
    cjk = sum(len(run) for run in CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4
