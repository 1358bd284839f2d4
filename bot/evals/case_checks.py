"""A case's own checks, made after its last turn: ``max_cost`` (its estimated cost: its turns' model calls, the
router's among them, and its judges'), ``max_latency_ms`` (its turns' times summed) and ``check:`` (Python checks
given the last turn's transcript, the earlier turns in it).  Over a limit is a failure, not an error.

A cost can be checked only when every model that answered has a price (``budgets.prices``); one without is said
(``no price for model X: cannot check cost``) and the check does not pass.  The offline and scripted models cost
nothing.  (A model under test without a price is refused before the run: :mod:`bot.evals.preflight`.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bot.config.settings import Settings
from bot.evals.pycheck import Transcript, code_check
from bot.evals.results import CheckResult, TrialResult
from bot.evals.suite import Case, Suite

FREE_MODELS = frozenset({"offline", "scripted"})
"""Models that cost nothing (no price needed)."""


def models_called(events: Iterable[dict[str, Any]], trial: TrialResult) -> list[str]:
    """The models a trial asked (agents, the router, judges), from its trace events and judge records."""
    names = [str(e.get("model") or "") for e in events if e.get("type") == "llm_call"]
    names += [
        str(e["model_call"].get("model") or "")
        for e in events
        if e.get("type") == "route" and isinstance(e.get("model_call"), dict)
    ]
    names += [c.judge.model for c in trial.all_checks if c.judge is not None]
    return [n for n in dict.fromkeys(names) if n]


def has_case_checks(case: Case) -> bool:
    return case.max_cost is not None or case.max_latency_ms is not None or bool(case.check)


async def check_case(
    case: Case,
    trial: TrialResult,
    transcripts: Sequence[Transcript],
    *,
    base_dir: Path | None,
    models: Sequence[str],
    priced: Callable[[str], bool],
) -> list[CheckResult]:
    """The case's own checks on the finished ``trial`` (its turns played, ``transcripts`` of each: at least one);
    ``models``: the models it asked; ``priced(name)``: whether ``budgets.prices`` has a price for one."""
    out = []
    if case.max_latency_ms is not None:
        total = trial.latency_ms
        parts = " + ".join(f"{t.latency_ms:.0f}" for t in trial.turns)
        seen = f"{total:.0f} ms" + (f" ({parts})" if len(trial.turns) > 1 else "")
        expected = f"the case's turns take ≤ {case.max_latency_ms:g} ms"
        out.append(
            CheckResult(check="max_latency_ms", expected=expected, passed=total <= case.max_latency_ms, seen=seen)
        )
    if case.max_cost is not None:
        out.append(_cost(case.max_cost, trial, models, priced))
    for spec in case.check:
        out.append(await code_check(spec, base_dir, transcripts[-1]))
    return out


def priced(settings: Settings) -> Callable[[str], bool]:
    """Whether the settings' ``budgets.prices`` price a model (as a response or a judge label names it)."""
    return lambda name: settings.budgets.price(name) is not None


def _cost(limit: float, trial: TrialResult, models: Sequence[str], priced: Callable[[str], bool]) -> CheckResult:
    expected = f"the case costs ≤ ${limit:g}"
    unpriced = [m for m in models if m not in FREE_MODELS and not priced(m)]
    if unpriced:
        seen = "; ".join(f"no price for model {m}: cannot check cost" for m in unpriced)
        return CheckResult(check="max_cost", expected=expected, passed=False, seen=seen)
    total = trial.cost
    judged = f" (judges ${trial.judge_cost:.6f})" if trial.judge_cost else ""
    return CheckResult(check="max_cost", expected=expected, passed=total <= limit, seen=f"${total:.6f}{judged}")


def unpriced(suite: Suite, settings: Settings) -> list[str]:
    """A set-up problem when cases check ``max_cost`` and the model under test (``settings``' main model) has no
    price: their cost could not be checked."""
    provider = settings.model.main_provider()
    if provider in FREE_MODELS:
        return []
    costed = [c.id for c in suite.cases if c.max_cost is not None]
    label = f"{provider}/{settings.model.name}"
    if not costed or settings.budgets.price(label) is not None:
        return []
    shown = ", ".join(costed[:5]) + (" …" if len(costed) > 5 else "")
    return [
        f"model {label}: no price in budgets.prices, so max_cost cannot be checked ({len(costed)} case(s): {shown}); "
        f"give its price (budgets.prices.{settings.model.name}: {{input: …, output: …}} per million tokens)"
    ]
