"""Measuring routing on a team's own messages: ``bot route --eval FILE.tsv``.

The file has one ``label<TAB>message`` a line (``#`` starts a comment line; ``\\n`` and ``\\t`` inside a message
are a newline and a tab, so a pasted log fits on one line). Each message is routed as the gateway would route it
(nothing runs); the report gives the accuracy, each agent's precision and recall, the confusion matrix (rows:
the label, columns: where it went) and every misroute with the decision's note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\"}


class EvalFileError(ValueError):
    """A line of an evaluation file that is not ``label<TAB>message``."""


def unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def read_labelled(path: Path) -> list[tuple[str, str]]:
    """(label, message) per line of ``path``; a line without a tab or a label raises :class:`EvalFileError`."""
    rows: list[tuple[str, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        label, tab, message = line.partition("\t")
        if not tab or not label.strip() or not message.strip():
            raise EvalFileError(f"{path}:{number}: expected 'label<TAB>message', got {line[:60]!r}")
        rows.append((label.strip(), unescape(message.strip())))
    return rows


@dataclass
class Outcome:
    label: str
    text: str
    agent: str
    method: str
    confidence: float
    note: str = ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def summary(self, unknown: Iterable[str] = ()) -> dict[str, Any]:
        """Accuracy, per-agent precision / recall, the confusion matrix and the misroutes, as JSON-ready data."""
        outcomes = self.outcomes
        labels = sorted({o.label for o in outcomes} | {o.agent for o in outcomes})
        right = sum(o.agent == o.label for o in outcomes)
        truth = Counter(o.label for o in outcomes)
        went = Counter(o.agent for o in outcomes)
        hits = Counter(o.label for o in outcomes if o.agent == o.label)
        per_agent = {
            label: {
                "messages": truth[label],
                "precision": round(hits[label] / went[label], 4) if went[label] else None,
                "recall": round(hits[label] / truth[label], 4) if truth[label] else None,
            }
            for label in labels
        }
        matrix = {label: {col: 0 for col in labels} for label in sorted(truth)}
        for o in outcomes:
            matrix[o.label][o.agent] += 1
        out: dict[str, Any] = {
            "messages": len(outcomes),
            "accuracy": round(right / len(outcomes), 4) if outcomes else None,
            "per_agent": per_agent,
            "confusion": matrix,
            "misroutes": [
                {
                    "label": o.label,
                    "agent": o.agent,
                    "method": o.method,
                    "confidence": o.confidence,
                    "text": o.text if len(o.text) <= 160 else o.text[:157] + "…",
                    "note": o.note,
                }
                for o in outcomes
                if o.agent != o.label
            ],
        }
        missing = sorted(set(unknown))
        if missing:
            out["unknown_labels"] = missing
        return out


def render(summary: dict[str, Any]) -> str:
    """The report as text for a terminal."""
    lines = [
        f"{summary['messages']} messages, accuracy {summary['accuracy']:.1%}"
        if summary["accuracy"] is not None
        else "no messages"
    ]
    if summary.get("unknown_labels"):
        lines.append(f"labels that are no agent here: {', '.join(summary['unknown_labels'])}")
    lines += ["", f"{'agent':<22} {'messages':>8} {'precision':>9} {'recall':>7}"]
    for agent, row in summary["per_agent"].items():
        p = "-" if row["precision"] is None else f"{row['precision']:.1%}"
        r = "-" if row["recall"] is None else f"{row['recall']:.1%}"
        lines.append(f"{agent:<22} {row['messages']:>8} {p:>9} {r:>7}")
    columns: Sequence[str] = list(summary["per_agent"])
    width = max([len(c) for c in columns] + [5])
    lines += [
        "",
        "confusion (rows: label, columns: routed to)",
        " " * (width + 1) + " ".join(c[:6].rjust(6) for c in columns),
    ]
    for label, row in summary["confusion"].items():
        lines.append(f"{label:<{width}} " + " ".join(str(row[c]).rjust(6) for c in columns))
    if summary["misroutes"]:
        lines += ["", f"misroutes ({len(summary['misroutes'])}):"]
        for m in summary["misroutes"]:
            lines.append(f"  {m['label']} -> {m['agent']} ({m['method']}, {m['confidence']:.2f}): {m['text']!r}")
    return "\n".join(lines)
