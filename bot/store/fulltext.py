"""Full-text search terms as the memory tables store and query them: CJK grams (stored beside each memory) and
the FTS5 / ``to_tsquery`` expressions of a search.

Full-text search on both databases tokenises by words, and a run of Chinese or Japanese characters is one word to
it; SQLite's trigram tokenizer misses two-character words (``东京``). So every memory also stores its CJK
characters and character pairs (``grams``) and a query searches those: ``东京`` finds "我下周去东京".
"""

from __future__ import annotations

import re

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def grams(text: str) -> str:
    """The CJK characters and adjacent pairs of ``text``, space-separated (empty without CJK)."""
    out: list[str] = []
    for run in CJK.findall(text):
        out.extend(run)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(dict.fromkeys(out))


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
