"""What a release is gated on, beside the run's figures: each model's pass rate (``--min-pass RATE`` for every
model, ``--min-pass MODEL=RATE`` for one), each case's passes out of its repeats (``--case-min K``: at least K of
the ``--repeat`` N trials of every case, per model), and no regression against a baseline run
(``--fail-on-regression RUN``: a case that passed there and does not pass now).  Each broken gate is one line;
``bot eval`` exits 1 when there is any."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.evals.results import RunResult


class GateError(ValueError):
    """A gate given wrongly (a rate outside 0-1, a model the run does not have): a set-up error."""


@dataclass
class Gates:
    min_pass: float = 1.0
    """Every model's pass rate, unless ``per_model`` names it."""
    per_model: dict[str, float] = field(default_factory=dict)
    case_min: int | None = None
    baseline: RunResult | None = None

    @classmethod
    def parse(cls, min_pass: list[str], case_min: int | None = None) -> Gates:
        """``--min-pass`` values: ``RATE`` (every model) or ``MODEL=RATE`` (one), each rate 0-1."""
        gates = cls(case_min=case_min)
        for given in min_pass:
            model, sep, rate = given.rpartition("=")
            try:
                value = float(rate)
            except ValueError:
                raise GateError(f"--min-pass {given!r}: a rate 0-1, or MODEL=RATE") from None
            if not 0 <= value <= 1:
                raise GateError(f"--min-pass {given!r}: the rate is between 0 and 1")
            if sep:
                gates.per_model[model.strip()] = value
            else:
                gates.min_pass = value
        return gates

    def check_models(self, models: list[str]) -> None:
        """A ``MODEL=RATE`` for a model the run does not test is a mistake, said before the run."""
        unknown = [m for m in self.per_model if m not in models]
        if unknown:
            raise GateError(f"--min-pass {unknown[0]}=…: the run tests {', '.join(models) or 'the configured model'}")

    def broken(self, result: RunResult) -> list[str]:
        """One line per broken gate (none: the run may ship)."""
        out = []
        if not result.trials:
            return ["no trial ran"]
        for model, totals in result.by_model().items():
            wanted = self.per_model.get(model, self.min_pass)
            if totals.pass_rate < wanted:
                out.append(f"{model}: pass rate {totals.pass_rate:.0%} is below {wanted:.0%} (--min-pass)")
        if self.case_min is not None:
            for (case, model), totals in result.by_case().items():
                if totals.passed < min(self.case_min, totals.trials):
                    out.append(
                        f"{case} [{model}]: {totals.passed}/{totals.trials} passed, fewer than {self.case_min} "
                        "(--case-min)"
                    )
        if self.baseline is not None:
            before = self.baseline.by_case()
            for key, totals in result.by_case().items():
                old = before.get(key)
                if old is not None and old.trials and old.passed == old.trials and totals.passed < totals.trials:
                    out.append(
                        f"{key[0]} [{key[1]}]: passed in run {self.baseline.id}, {totals.passed}/{totals.trials} now "
                        "(--fail-on-regression)"
                    )
        return out
