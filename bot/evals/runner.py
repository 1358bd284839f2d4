"""Running a suite: every case against every model, ``repeat`` times, ``concurrency`` at once.

Each trial is a real gateway (the supervisor, routing, agents, tools, interrupts, memory and tracing, unchanged)
started on its own SQLite store in a fresh folder (a copy of one database migrated at the start of the run),
with the tools' workspace there too, so side effects stay in it; its only channel is the eval's seat.  Every
setting comes from the configuration, then the suite's ``config``, the case's, the model's, and last what the
eval itself needs (that store and workspace, every event traced, answers whole, no platform channel, no HTTP
server).  A budget stops new trials once the run has spent it; trials under way finish.

A suite comes from anyone: it may not set what :mod:`bot.evals.trust` guards unless the options trust it, what
its turns attach is read from its folder only (:mod:`bot.evals.confine`, a copy is sent), a run is at most
:data:`MAX_TRIALS` trials of at most :data:`MAX_REPEAT` repeats, and each trial's result passes the redaction step
(the configured secrets, and what looks like a password or key) before anyone sees it: the progress line, the
results, the files and the store get only that.  The trial's model label is the model its settings chose.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.models.base import Model
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings
from bot.evals.answers import Cassette, ResponseCache, cache_folder
from bot.evals.cache import RunCache
from bot.evals.models import JudgeModels, ModelChoice, choose, configured
from bot.evals.pairs import PairResult
from bot.evals.pairwise import Pairwise, cost_at
from bot.evals.preflight import refusal, set_up_problems
from bot.evals.results import RunResult, TrialResult, redacted
from bot.evals.scratch import scratch
from bot.evals.seat import GatewayFactory
from bot.evals.simulate import typed_in
from bot.evals.suite import Case, Suite
from bot.evals.trial import TrialPlayer
from bot.evals.trust import Refused, UntrustedSuite, guarded
from bot.ids import fast_id
from bot.redaction import Redaction
from bot.store.sql.migrate import migrate_url

log = logging.getLogger(__name__)

SettingsSource = Callable[[dict[str, Any]], Settings]
"""Settings from every configured layer with these overrides on top (``load_settings(config, overrides=…)``)."""


MAX_REPEAT = 100
"""The most times a case is run against a model (``--repeat``)."""
MAX_TRIALS = 5000
"""The most trials in one run: cases × models × repeats."""


class TooLarge(Refused):
    """A run of more trials (or repeats) than a run may have."""


@dataclass
class EvalOptions:
    models: list[ModelChoice] = field(default_factory=list)
    """Empty: the suite's ``models``, else the configured model."""
    repeat: int = 1
    concurrency: int = 4
    budget: float | None = None
    """Start no trial once the run's estimated cost reached this."""
    judge: str | Model | None = None
    """The judge for every ``judge:`` check that names none (a model's name, or the model)."""
    clock: Clock = SYSTEM_CLOCK
    keep: Path | None = None
    """Keep each trial's folder (store, workspace) under here, to look at afterwards."""
    on_trial: Callable[[TrialResult], None] | None = None
    """Told each trial as it ends (a progress line)."""
    source: str = ""
    trust_suite: bool = False
    """Let the suite set what :mod:`bot.evals.trust` guards (the operator said ``--trust-suite``)."""
    temp_root: Path | None = None
    """Where the run's temporary folder is made (None: the system's temp dir)."""
    cache: bool = False
    """Answer a model call from the response cache when the same call was answered before (:mod:`bot.evals.cache`;
    ``bot eval`` has it on unless ``--no-cache``)."""
    cache_dir: Path | None = None
    """Where the response cache is kept (None: ``data_dir/evals/cache``)."""
    record: Cassette | None = None
    """Gets every model call's answer of the run (``--record``: written once the run is over)."""
    replay: Cassette | None = None
    """Every model call is answered from this cassette only, never by the model (``--replay``)."""


def merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


class Runner:
    def __init__(
        self, suite: Suite, settings: SettingsSource, options: EvalOptions, base_dir: Path, gateway: GatewayFactory
    ) -> None:
        """``base_dir``: where the suite's relative paths (agent folders, attachments) start; ``gateway``: builds
        each trial's gateway (``bot eval`` passes :class:`bot.gateway.app.Gateway`)."""
        self.suite = suite
        self.gateway = gateway
        self.settings = settings
        self.options = options
        self.base_dir = base_dir
        self.clock = options.clock
        self.spent = 0.0
        self.stopped: str | None = None
        self._secrets: set[str] = set()
        self._player: TrialPlayer | None = None

    def check(self, models: int) -> None:
        """Refuse a run that may not start: a suite setting what it may not, or too many trials."""
        found = guarded(self.suite, self.base_dir)
        if found and not self.options.trust_suite:
            raise UntrustedSuite(self.options.source or self.suite.name, found)
        repeat = self.options.repeat
        if not 1 <= repeat <= MAX_REPEAT:
            raise TooLarge(f"--repeat {repeat}: a case is run 1 to {MAX_REPEAT} times")
        trials = len(self.suite.cases) * models * repeat
        if trials > MAX_TRIALS:
            raise TooLarge(
                f"{len(self.suite.cases)} cases × {models} models × {repeat} repeats = {trials:,} trials; "
                f"a run has at most {MAX_TRIALS:,} (pick cases with --case or --tag, or fewer models or repeats)"
            )

    async def run(self) -> RunResult:
        base = self.settings({})
        self._secrets = {*base.secrets(), *Redaction.configured(base.model, base.channels, base.mcp).secrets}
        models = self.options.models or [choose(m) for m in self.suite.models] or [configured(base.model)]
        self.check(len(models))
        self._channels = [name for name in type(base.channels).model_fields if name != "console"]
        nowhere = self.base_dir / ".bot-eval-preflight"  # only named: nothing is written there

        def settings_of(case: Case, model: ModelChoice) -> Settings:
            return self.settings(self.overrides(case, model, nowhere / "data", nowhere / "workspace"))

        replaying = self.options.replay is not None
        problems = await set_up_problems(self.suite, self.base_dir, models, settings_of, replaying=replaying)
        if problems:
            raise refusal(problems)
        judges = JudgeModels(base.model, timezone=base.jobs.timezone, inline_max_mb=base.media.inline_max_mb)
        stored = None
        if self.options.cache and not replaying:
            stored = ResponseCache(self.options.cache_dir or cache_folder(base.store.data_dir.expanduser()))
        if self.options.record is not None:
            self.options.record.suite, self.options.record.secrets = self.suite.name, self._secrets
        source = self.options.replay if self.options.replay is not None else stored
        cache = RunCache(source, self.options.record, replaying) if source or self.options.record else None
        self._player = TrialPlayer(
            self.suite,
            self.base_dir,
            self.gateway,
            lambda case, model, data, workspace: self.settings(self.overrides(case, model, data, workspace)),
            judges=judges,
            given_judge=self.options.judge,
            clock=self.clock,
            keep=self.options.keep,
            secrets=self._secrets,
            cache=cache,
        )
        result = RunResult(
            id=fast_id(),
            suite=self.suite.name,
            source=self.options.source,
            started_at=self.clock.utcnow(),
            models=[m.label for m in models],
            repeat=self.options.repeat,
            concurrency=self.options.concurrency,
            budget=self.options.budget,
        )
        gate = asyncio.Semaphore(max(1, self.options.concurrency))
        try:
            with scratch(self.options.temp_root) as root:
                result.trials = await self._trials(models, root, gate)
            result.pairwise = await self._compared(result.trials, judges, base, cache)
        finally:
            await judges.aclose()
            if stored is not None:
                stored.close()
        result.models = list(dict.fromkeys(t.model for t in result.trials))
        result.stopped = self.stopped
        result.finished_at = self.clock.utcnow()
        return result

    async def _trials(self, models: list[ModelChoice], root: Path, gate: asyncio.Semaphore) -> list[TrialResult]:
        template = root / "template.db"
        await migrate_url(f"sqlite:///{template}")

        done: dict[int, TrialResult] = {}
        told = 0

        def tell(index: int, trial: TrialResult) -> None:
            """Progress in the run's order (case, model, attempt), whatever finishes first: each line as soon as
            every trial before it has finished, so two runs of a suite print the same lines in the same order."""
            nonlocal told
            done[index] = trial
            while told in done and self.options.on_trial is not None:
                self.options.on_trial(done.pop(told))
                told += 1

        async def one(index: int, case: Case, model: ModelChoice, attempt: int) -> TrialResult:
            async with gate:
                if self.options.budget is not None and self.spent >= self.options.budget:
                    self.stopped = self.stopped or (
                        f"the budget of ${self.options.budget:g} was reached (${self.spent:.4f} spent)"
                    )
                    trial = TrialResult(case=case.id, model=model.label, attempt=attempt, skipped=self.stopped)
                else:
                    assert self._player is not None
                    trial = await self._player.trial(case, model, attempt, root, template)
                    self.spent += trial.cost
            trial = redacted(trial, Redaction(self._secrets), typed=typed_in(case, trial))
            tell(index, trial)
            return trial

        # A task group, not gather: cancelled (``bot eval`` on SIGTERM), it waits until every trial has stopped its
        # gateway, so the run's folder is removed after the last file in it was closed.
        async with asyncio.TaskGroup() as group:
            runs = [
                (case, model, attempt)
                for case in self.suite.cases
                for model in models
                for attempt in range(1, self.options.repeat + 1)
            ]
            tasks = [group.create_task(one(i, *run)) for i, run in enumerate(runs)]
        return [task.result() for task in tasks]

    async def _compared(
        self, trials: list[TrialResult], judges: JudgeModels, base: Settings, cache: RunCache | None
    ) -> list[PairResult]:
        """The pairwise checks' comparisons of the trials' answers (:mod:`bot.evals.pairwise`), within the
        budget, the judge's answers through the run's response cache, redacted as the trials are."""
        options = self.options
        pairs = Pairwise(
            self.suite,
            judges,
            options.judge,
            cost_at(base),
            concurrency=options.concurrency,
            budget=options.budget,
            cache=cache,
        )
        compared = await pairs.compare(trials, self.spent)
        self.spent = pairs.spent
        typed = {case.id: [t.user for t in case.turns if t.user] for case in self.suite.cases}
        return [redacted(p, Redaction(self._secrets), typed=typed.get(p.case, [])) for p in compared]

    def overrides(self, case: Case, model: ModelChoice, data: Path, workspace: Path) -> dict[str, Any]:
        out = merged(merged(self.suite.config, case.config), model.settings)
        if self.suite.agents:
            out = merged(out, {"agents": {"dirs": [str(self.base_dir / d) for d in self.suite.agents]}})
        # Streaming as the platforms do it (on unless the suite turns it off): an endpoint whose streamed answers
        # or tool-call deltas break fails here too. The seat keeps the final messages, not the previews.
        console = {
            "enabled": True,
            "allow_from": ["*"],
            "admins": [case.user] if case.admin else [],
            "mention_policy": "all",
        }
        eval_needs = {
            "store": {"data_dir": str(data), "url": None},
            "bus": {"url": None},
            "tools": {"workspace": str(workspace)},
            "http": {"enabled": False},
            "web": {"enabled": False},
            "tracing": {"enabled": True, "sample_rate": 1.0, "events": []},
            "budgets": {"enabled": True},
            "channels": {"console": console, **{name: {"enabled": False} for name in self._channels}},
        }
        return merged(out, eval_needs)


async def run_suite(
    suite: Suite,
    settings: SettingsSource,
    options: EvalOptions | None = None,
    base_dir: Path | None = None,
    *,
    gateway: GatewayFactory,
) -> RunResult:
    """Run ``suite``, each trial on a gateway ``gateway`` builds; the results (nothing saved:
    :mod:`bot.evals.store` and :func:`save_json` do that)."""
    return await Runner(suite, settings, options or EvalOptions(), base_dir or Path.cwd(), gateway).run()
