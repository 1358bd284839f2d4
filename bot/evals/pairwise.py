"""A pairwise judge (``expect: {pairwise: RUBRIC}``): after the trials, the answers two models gave to the same
turn of the same attempt of a case are shown to a judge model with the person's message and the rubric, and it
says which is better (A, B or a tie) and why.

Judges favour the answer they read first (or second), so the order is drawn per comparison by a random generator
seeded with the comparison itself (the case, turn, attempt and pair: a rerun asks the same, which the response
cache can answer), and by default the judge is asked again with the order swapped: two verdicts that name the
same model make it the winner, any other two are a tie.  That is two judge calls per comparison (``swap: false``:
one).  Each call counts in the run's cost and ``--budget`` (a comparison is not started once the budget is spent)
and is kept with its prompt, verdict, reason and tokens.

Every pair of the run's models is compared (three models: three pairs), each in the run's order.  A run of one
model compares nothing: its pairwise checks are reported skipped with that reason, as is a comparison where
either model did not answer the turn (its trial was not run, or the turn could not be played).  A pairwise check
passes or fails no trial: a model's pass rate and ``--min-pass`` are the other checks' alone.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.messages import Message
from agents.models.base import Model, ModelError, Usage
from bot.errors import ConfigError
from bot.evals.judge import json_object
from bot.evals.pairs import PairResult, PairVerdict

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.evals.cache import RunCache
    from bot.evals.expect import PairwiseCheck, Turn
    from bot.evals.models import JudgeModels
    from bot.evals.results import TrialResult
    from bot.evals.suite import Case, Suite

SYSTEM = (
    "You compare two answers a chat bot gave to the same message, against a rubric. Say which answer meets the "
    "rubric better: A, B, or tie when neither is better. Judge only what the rubric asks: which answer comes "
    "first, and how long it is, do not matter. Answer with a JSON object only: "
    '{"reason": string, "winner": "A" | "B" | "tie"}.'
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["reason", "winner"],
}
ONE_MODEL = "the run has one model ({}); a pairwise check compares two or more (--models A,B)"
NO_JUDGE = "no judge: give --judge provider/name (or judge.model in the suite, or the check's model)"
UNJUDGING = ("offline", "scripted")
"""What cannot judge: the offline stand-in, a scripted model."""
NOWHERE = Path("/nonexistent/bot-eval-pairwise")
"""The folder a comparison's cache keys leave out (a trial's own folder; a comparison has none)."""


def cost_at(settings: Settings) -> Callable[[str, Usage], float]:
    """A call's estimated cost at the settings' ``budgets.prices`` (as :class:`bot.ops.budgets.Budgets` counts)."""

    def cost(model: str, usage: Usage) -> float:
        price = settings.budgets.price(model)
        if price is None:
            return 0.0
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = price.input if price.cached is None else price.cached
        fresh = usage.input_tokens - cached
        return (fresh * price.input + cached * cached_price + usage.output_tokens * price.output) / 1_000_000

    return cost


def prompt_of(said: str, first: str, second: str, rubric: str) -> str:
    return (
        f"<Message>\n{said}\n</Message>\n<Answer A>\n{first}\n</Answer A>\n<Answer B>\n{second}\n</Answer B>\n"
        f"<Rubric>\n{rubric}\n</Rubric>"
    )


def pairwise_checks(suite: Suite) -> list[tuple[Case, int, Turn, PairwiseCheck]]:
    """Each turn with a pairwise check: (case, turn number, turn, check)."""
    return [
        (case, n, turn, turn.expect.pairwise)
        for case in suite.cases
        for n, turn in enumerate(case.turns, 1)
        if turn.expect.pairwise is not None
    ]


def unjudged_pairs(suite: Suite, judge: str | None, models: list[str]) -> str | None:
    """Pairwise checks of a run of two or more models that no model can judge (none named, or the offline or
    scripted one): a set-up error, said before any model call (``bot eval`` exits 2)."""
    if len(set(models)) < 2:
        return None
    cases = list(
        dict.fromkeys(
            case.id
            for case, _, _, check in pairwise_checks(suite)
            if (check.model or judge or suite.judge.model) in (None, *UNJUDGING)
        )
    )
    if not cases:
        return None
    return (
        f"{len(cases)} case(s) have pairwise: checks no model can judge ({', '.join(cases[:5])}"
        f"{' …' if len(cases) > 5 else ''}): the offline stand-in and a scripted model cannot. Give --judge "
        "provider/name (or judge.model in the suite), or leave those cases out with --case/--tag"
    )


class Pairwise:
    """The comparisons of one run (made when its trials have ended)."""

    def __init__(
        self,
        suite: Suite,
        judges: JudgeModels,
        given: str | Model | None,
        cost: Callable[[str, Usage], float],
        *,
        concurrency: int = 4,
        budget: float | None = None,
        cache: RunCache | None = None,
    ) -> None:
        """``given``: ``--judge`` (a name, or the model); ``cost(model, usage)``: a call's cost at the prices;
        ``cache``: the run's recorded answers (a judge named by a name answers through it, as the trials' do)."""
        self.suite = suite
        self.judges = judges
        self.given = given
        self.cost = cost
        self.gate = asyncio.Semaphore(max(1, concurrency))
        self.budget = budget
        self.cache = cache
        self.spent = 0.0

    async def compare(self, trials: list[TrialResult], spent: float = 0.0) -> list[PairResult]:
        """Every comparison the suite's pairwise checks ask of ``trials``, in the run's order (case, turn,
        attempt, pair); ``spent``: what the run spent before (``self.spent`` is the total after)."""
        self.spent = spent
        checks = pairwise_checks(self.suite)
        labels = list(dict.fromkeys(t.model for t in trials))
        if not checks or not labels:
            return []
        attempts = max((t.attempt for t in trials), default=1)
        found = {(t.case, t.model, t.attempt): t for t in trials}
        jobs = []
        for case, n, turn, check in checks:
            said = turn.user if turn.user is not None else f"(pressed {turn.press or turn.choice})"
            for attempt in range(1, attempts + 1):
                if len(labels) < 2:
                    jobs.append(self._skipped(case.id, n, attempt, check, labels, ONE_MODEL.format(labels[0])))
                    continue
                for pair in itertools.combinations(labels, 2):
                    answers = [found.get((case.id, label, attempt)) for label in pair]
                    jobs.append(self._one(case.id, n, attempt, check, list(pair), answers, said))
        return list(await asyncio.gather(*jobs))

    async def _skipped(
        self, case: str, turn: int, attempt: int, check: PairwiseCheck, models: list[str], why: str
    ) -> PairResult:
        return PairResult(case=case, turn=turn, attempt=attempt, rubric=check.rubric, models=models, skipped=why)

    async def _one(
        self,
        case: str,
        turn: int,
        attempt: int,
        check: PairwiseCheck,
        pair: list[str],
        trials: list[TrialResult | None],
        said: str,
    ) -> PairResult:
        result = PairResult(case=case, turn=turn, attempt=attempt, rubric=check.rubric, models=pair)
        answers: list[str] = []
        for label, trial in zip(pair, trials, strict=True):
            answer, why = _answer(trial, turn)
            if why is not None:
                result.skipped = f"{label} did not answer turn {turn}: {why}"
                return result
            answers.append(answer)
        judge, label, why = self._judge(check, f"{case}|{pair[0]}|{pair[1]}|{turn}", attempt)
        result.judge = label
        if judge is None:
            result.skipped = why
            return result
        async with self.gate:
            if self.budget is not None and self.spent >= self.budget:
                result.skipped = f"the budget of ${self.budget:g} was reached (${self.spent:.4f} spent)"
                return result
            rng = random.Random(f"{case}|{turn}|{attempt}|{pair[0]}|{pair[1]}")
            order = [0, 1] if rng.random() < 0.5 else [1, 0]
            orders = [order, order[::-1]] if check.swap else [order]
            for shown in orders:
                verdict = await self._ask(judge, label, check.rubric, said, [pair[i] for i in shown], answers, shown)
                result.verdicts.append(verdict)
                self.spent += verdict.cost
                if verdict.error is not None:
                    break
        _decide(result)
        return result

    def _judge(self, check: PairwiseCheck, compared: str, attempt: int) -> tuple[Model | None, str, str]:
        """The judge of ``check`` (through the cache, keyed by what is ``compared``), its label, and (no judge)
        why not."""
        given = self.given
        if check.model is None and isinstance(given, Model):
            judge: Model = given
            label = given.name
        else:
            spec = check.model or (given if isinstance(given, str) else None) or self.suite.judge.model
            if spec is None:
                return None, "", NO_JUDGE
            try:
                if self.cache is None:
                    judge = self.judges.get(spec)
                else:
                    answers = self.cache.trial(f"pairwise|{compared}", spec, attempt, NOWHERE)
                    judge = self.judges.cached(spec, answers.wrap)
            except ConfigError as exc:
                return None, spec, f"the judge {spec}: {exc}"
            label = spec
        if not judge.understands:
            return None, label, f"{label} cannot judge (the offline stand-in); give --judge provider/name"
        return judge, label, ""

    async def _ask(
        self, judge: Model, label: str, rubric: str, said: str, shown: list[str], answers: list[str], order: list[int]
    ) -> PairVerdict:
        prompt = prompt_of(said, answers[order[0]], answers[order[1]], rubric)
        verdict = PairVerdict(first=shown[0], prompt=prompt)
        try:
            response = await judge.request([Message.user(prompt)], system=SYSTEM, response_schema=SCHEMA)
        except Exception as exc:  # a judge that fails (or a client's bug) leaves the comparison unjudged
            verdict.error = f"the judge failed: {exc}" if isinstance(exc, ModelError) else f"the judge failed: {exc!r}"
            return verdict
        usage = response.usage
        verdict.input_tokens, verdict.output_tokens = usage.input_tokens, usage.output_tokens
        verdict.cached = bool(getattr(response, "from_cache", False))
        verdict.cost = 0.0 if verdict.cached else self.cost(response.model or label, usage)
        said_winner = _winner(response.parsed, response.text or "")
        if said_winner is None:
            verdict.error = f"the judge did not answer A, B or tie: {(response.text or '')[:200]!r}"
            return verdict
        verdict.winner, verdict.reason = said_winner
        return verdict


def _answer(trial: TrialResult | None, turn: int) -> tuple[str, str | None]:
    """The answer ``trial`` gave to turn ``turn`` (numbered from 1), or why there is none."""
    if trial is None:
        return "", "its trial is missing"
    if trial.skipped:
        return "", f"its trial was not run ({trial.skipped})"
    played = next((t for t in trial.turns if t.index == turn), None)
    if played is None:
        return "", f"its trial ended before it ({trial.error or 'not played'})"
    if played.error:
        return "", f"it could not be played ({played.error})"
    return played.answer, None


def _decide(result: PairResult) -> None:
    """The winner from the verdicts: the same model both times, else a tie; none when the judge failed."""
    failed = next((v.error for v in result.verdicts if v.error is not None), None)
    if failed is not None:
        result.error = failed
        return
    named = [_named(v, result.models) for v in result.verdicts]
    if len(set(named)) == 1:
        result.winner = named[0]
        result.reason = result.verdicts[0].reason
        return
    result.winner = "tie"
    shown = "; ".join(f"{v.first} shown first: {_named(v, result.models)} ({v.reason})" for v in result.verdicts)
    result.reason = f"the verdicts differ when the order is swapped, so a tie: {shown}"


def _named(verdict: PairVerdict, models: list[str]) -> str:
    """What ``verdict`` said as a model's label (or ``tie``)."""
    if verdict.winner == "tie":
        return "tie"
    second = models[1] if verdict.first == models[0] else models[0]
    return verdict.first if verdict.winner == "A" else second


def _winner(parsed: Any, text: str) -> tuple[str, str] | None:
    data = json_object(parsed, text)
    if data is None:
        return None
    said = str(data.get("winner") or "").strip().strip("\"'").lower()
    winner = {"a": "A", "answer a": "A", "b": "B", "answer b": "B", "tie": "tie"}.get(said)
    return (winner, str(data.get("reason") or "")) if winner is not None else None
