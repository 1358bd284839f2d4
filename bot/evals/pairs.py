"""What a pairwise judge found (``expect: {pairwise: RUBRIC}``, :mod:`bot.evals.pairwise`): per case, turn,
attempt and pair of models the winner and the judge's reason, with each of its calls; per pair of models a
win/tie/loss line.  A comparison, not a check: it passes or fails no trial and no gate."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

SHOWN_REASONS = 5
"""The most reasons for skipped comparisons the report names (each with its count)."""


class PairVerdict(BaseModel):
    """One call of the judge: the two answers in one order."""

    first: str
    """The model whose answer was shown as A."""
    winner: str | None = None
    """``A``, ``B`` or ``tie`` as the judge said it (none: no verdict)."""
    reason: str = ""
    prompt: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cached: bool = False
    """Answered from the response cache or a cassette (it cost nothing)."""
    error: str | None = None


class PairResult(BaseModel):
    """Two models' answers to one turn of one attempt of a case, compared."""

    case: str
    turn: int
    attempt: int = 1
    rubric: str
    models: list[str]
    """The pair in the run's order (one model: the run had no other, ``skipped`` says so)."""
    judge: str = ""
    winner: str | None = None
    """The better model's label, ``tie``, or none (skipped, or the judge failed)."""
    reason: str = ""
    skipped: str | None = None
    """Why they were not compared: one model in the run, a turn not played, no judge, the budget."""
    error: str | None = None
    """Why the judge gave no verdict (it failed, or did not answer A, B or tie)."""
    verdicts: list[PairVerdict] = Field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.verdicts)

    @property
    def cost(self) -> float:
        return sum(v.cost for v in self.verdicts)

    @property
    def input_tokens(self) -> int:
        return sum(v.input_tokens for v in self.verdicts)

    @property
    def output_tokens(self) -> int:
        return sum(v.output_tokens for v in self.verdicts)


@dataclass
class Tally:
    """A pair of models over a run: the first's wins, ties and losses against the second."""

    first: str
    second: str
    wins: int = 0
    ties: int = 0
    losses: int = 0
    unjudged: int = 0
    why: str = ""
    """The first reason a comparison was not judged."""

    def line(self) -> str:
        counts = [_count(self.wins, "win"), _count(self.ties, "tie"), _count(self.losses, "loss", "losses")]
        more = f" ({self.unjudged} not judged: {self.why})" if self.unjudged else ""
        return f"{self.first} vs {self.second}: {', '.join(counts)}{more}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def tallies(pairs: list[PairResult]) -> list[Tally]:
    """A tally per pair of models, in the order the pairs first come (skipped comparisons left out)."""
    out: dict[tuple[str, str], Tally] = {}
    for pair in pairs:
        if len(pair.models) != 2 or pair.skipped is not None:
            continue
        first, second = pair.models
        tally = out.setdefault((first, second), Tally(first, second))
        if pair.winner == first:
            tally.wins += 1
        elif pair.winner == second:
            tally.losses += 1
        elif pair.winner == "tie":
            tally.ties += 1
        else:
            tally.unjudged += 1
            tally.why = tally.why or pair.error or "no verdict"
    return list(out.values())


def pairwise_lines(pairs: list[PairResult]) -> list[str]:
    """The report's lines: the judge's calls and cost, a win/tie/loss line per pair, what was skipped and why."""
    if not pairs:
        return []
    judged = [p for p in pairs if p.verdicts]
    if judged:
        judges = ", ".join(dict.fromkeys(p.judge for p in judged if p.judge))
        tokens = f"{sum(p.input_tokens for p in judged):,} → {sum(p.output_tokens for p in judged):,} tokens"
        calls = sum(p.calls for p in judged)
        out = [f"Pairwise (judge {judges}: {calls} calls, {tokens}, ${sum(p.cost for p in judged):.4f}):"]
    else:
        out = ["Pairwise:"]
    out += [f"  {tally.line()}" for tally in tallies(pairs)]
    skipped: dict[str, int] = {}
    for pair in pairs:
        if pair.skipped is not None:
            skipped[pair.skipped] = skipped.get(pair.skipped, 0) + 1
    shown = list(skipped.items())[:SHOWN_REASONS]
    out += [f"  {n} comparison{'s' if n > 1 else ''} skipped: {why}" for why, n in shown]
    more = sum(n for _, n in list(skipped.items())[SHOWN_REASONS:])
    if more:
        out.append(f"  {more} more skipped for other reasons (see the results' pairwise)")
    return out
