"""Where ``bot eval``'s recorded answers are kept: the response cache (:class:`ResponseCache`, a SQLite file under
``data_dir/evals/cache``) and cassettes (:class:`Cassette`, one portable JSONL file a teammate replays offline).

Both hold answers by key (a digest of the model and the request: :mod:`bot.evals.cache`); neither holds a request,
a header or a key.  A cassette's first line says what it is and its version; each further line is one answer with
where it was asked (case, model, attempt, turn), in the run's order.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bot.redaction import Redaction
from bot.store.sql.repos.eval_answers import CACHE_FILE, KEEP_DAYS, ResponseCache, clear_cache

__all__ = ["CACHE_FILE", "KEEP_DAYS", "ResponseCache", "clear_cache"]

log = logging.getLogger(__name__)

CASSETTE_FORMAT = "bot-eval-cassette"
CASSETTE_VERSION = 1


class CassetteError(ValueError):
    """A cassette that cannot be read (``bot eval --replay`` exits 2)."""


class AnswerSource(Protocol):
    """Recorded answers by key."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, model: str, answer: dict[str, Any]) -> None: ...


def cache_folder(data_dir: Path) -> Path:
    """Where ``bot eval`` keeps its response cache."""
    return data_dir / "evals" / "cache"


@dataclass
class Recorded:
    """One answer of a cassette and where it was asked."""

    key: str
    model: str
    answer: dict[str, Any]
    case: str = ""
    attempt: int = 1
    turn: int = 0
    order: tuple[str, str, int, int] = ("", "", 0, 0)
    """Case, model, attempt and the call's number in its trial: a cassette lists its answers in this order."""


@dataclass
class Cassette:
    """Answers by key: filled by a run (``--record``) and written, or read (``--replay``) and answered from."""

    suite: str = ""
    entries: dict[str, Recorded] = field(default_factory=dict)
    secrets: Iterable[str] = ()
    """Values a written cassette never holds (the configured secrets; what looks like a key or password)."""

    async def get(self, key: str) -> dict[str, Any] | None:
        found = self.entries.get(key)
        return found.answer if found is not None else None

    async def put(self, key: str, model: str, answer: dict[str, Any]) -> None:
        self.add(Recorded(key, model, answer))

    def add(self, entry: Recorded) -> None:
        self.entries.setdefault(entry.key, entry)

    def lines(self) -> list[str]:
        step = Redaction(self.secrets)
        head = {"format": CASSETTE_FORMAT, "version": CASSETTE_VERSION, "suite": self.suite}
        out = [json.dumps(head, ensure_ascii=False)]
        for entry in sorted(self.entries.values(), key=lambda e: e.order):
            line = {
                "key": entry.key,
                "model": entry.model,
                "case": entry.case,
                "attempt": entry.attempt,
                "turn": entry.turn,
                "answer": step.value(entry.answer),
            }
            out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
        return out

    def write(self, path: Path) -> None:
        """Write the cassette (whole or not at all: a temporary file renamed over ``path``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text("\n".join(self.lines()) + "\n", encoding="utf-8")
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """The cassette in ``path``; :class:`CassetteError` saying what is wrong (and on which line)."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CassetteError(f"--replay {path}: no such file (write one with --record)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CassetteError(f"--replay {path}: cannot be read ({exc})") from None
        lines = text.splitlines()
        try:
            head = json.loads(lines[0]) if lines else None
        except ValueError:
            head = None
        if not isinstance(head, dict) or head.get("format") != CASSETTE_FORMAT:
            raise CassetteError(f"--replay {path}: not a cassette (line 1 does not say format: {CASSETTE_FORMAT})")
        if head.get("version") != CASSETTE_VERSION:
            raise CassetteError(
                f"--replay {path}: cassette version {head.get('version')!r}; this bot reads version "
                f"{CASSETTE_VERSION} (record it again with --record)"
            )
        cassette = cls(suite=str(head.get("suite") or ""))
        for number, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                entry = Recorded(
                    key=str(data["key"]),
                    model=str(data.get("model") or ""),
                    answer=dict(data["answer"]),
                    case=str(data.get("case") or ""),
                    attempt=int(data.get("attempt") or 1),
                    turn=int(data.get("turn") or 0),
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise CassetteError(f"--replay {path}, line {number}: not an answer ({exc})") from None
            cassette.add(entry)
        return cassette
