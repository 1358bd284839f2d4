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
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.models.base import Model, Usage
from agents.models.scripted import ScriptedModel
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.evals.checks import CheckContext, check_turn, script_check, tools_of
from bot.evals.confine import OutsideError, read_confined
from bot.evals.judge import judge
from bot.evals.models import OFFLINE, JudgeModels, ModelChoice, choose, configured
from bot.evals.preflight import refusal, set_up_problems
from bot.evals.results import RESULT_CHARS, CheckResult, RunResult, TrialResult, TurnResult, redacted
from bot.evals.scratch import scratch
from bot.evals.seat import EvalChannel, GatewayFactory, GatewayUnderTest, Seat, TurnError, TurnLog
from bot.evals.suite import Case, JudgeCheck, Suite, Turn
from bot.evals.trust import Refused, UntrustedSuite, guarded
from bot.events import Sender
from bot.ids import fast_id
from bot.redaction import Redaction
from bot.store.migrate import migrate_url

log = logging.getLogger(__name__)

SettingsSource = Callable[[dict[str, Any]], Settings]
"""Settings from every configured layer with these overrides on top (``load_settings(config, overrides=…)``)."""


ENCODER_WAIT_S = 120.0
"""How long a trial waits for the sentence encoder (loaded once per process) before routing without it."""
MAX_REPEAT = 100
"""The most times a case is run against a model (``--repeat``)."""
MAX_TRIALS = 5000
"""The most trials in one run: cases × models × repeats."""
STOPPED_DRAIN_S = 0.5
"""How long a trial's gateway may finish what it does when the run is stopped (SIGTERM, SIGINT)."""
ATTACH_BYTES = 64 * 1024 * 1024
"""The largest file a turn attaches."""


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


def merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def unplayed(turn: Turn, index: int, stopped_at: int) -> TurnResult:
    """A turn after one that could not be played: each of its checks (an entry of a list or mapping counts as one)
    failed, so a model whose case stopped early has as many checks as one that went through."""
    seen = f"not played: turn {stopped_at} could not be played"
    checks = []
    for name, value in turn.expect.model_dump(exclude_defaults=True).items():
        count = len(value) if isinstance(value, list | dict) and name != "answer" else 1
        checks += [CheckResult(check=name, expected="(not played)", passed=False, seen=seen)] * count
    return TurnResult(index=index, action=_said(turn), checks=checks)


def _said(turn: Turn) -> str:
    if turn.user is not None:
        return f"user: {turn.user}" + (f" (+{len(turn.attach)} files)" if turn.attach else "")
    return f"press: {turn.press}" if turn.press is not None else f"choice: {turn.choice}"


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
        self._judges: JudgeModels | None = None
        self._secrets: set[str] = set()

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
        self._secrets = {*base.secrets(), *Redaction.from_settings(base).secrets}
        models = self.options.models or [choose(m) for m in self.suite.models] or [configured(base)]
        self.check(len(models))
        self._channels = [name for name in type(base.channels).model_fields if name != "console"]
        nowhere = self.base_dir / ".bot-eval-preflight"  # only named: nothing is written there

        def settings_of(case: Case, model: ModelChoice) -> Settings:
            return self.settings(self.overrides(case, model, nowhere / "data", nowhere / "workspace"))

        problems = await set_up_problems(self.suite, self.base_dir, models, settings_of)
        if problems:
            raise refusal(problems)
        self._judges = JudgeModels(base)
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
        finally:
            await self._judges.aclose()
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
                    trial = await self.trial(case, model, attempt, root, template)
                    self.spent += trial.cost
            trial = redacted(trial, Redaction(self._secrets), typed=[t.user for t in case.turns if t.user])
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

    # -- one trial -----------------------------------------------------------------------------------

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

    async def trial(self, case: Case, model: ModelChoice, attempt: int, root: Path, template: Path) -> TrialResult:
        trial = TrialResult(case=case.id, model=model.label, attempt=attempt)
        started = self.clock.monotonic()
        folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{case.id}-{model.label}-{attempt}")
        data, workspace = folder / "data", folder / "workspace"
        data.mkdir(parents=True)
        workspace.mkdir()
        shutil.copyfile(template, data / "bot.db")
        for name, text in case.files.items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(text, encoding="utf-8")
        try:
            settings = self.settings(self.overrides(case, model, data, workspace))
            instance = model.make(case) if model.make is not None else None
        except ConfigError as exc:
            trial.error = str(exc)
            return trial
        self._secrets |= {*settings.secrets(), *Redaction.from_settings(settings).secrets}
        if model.make is None:
            model = replace(model, label=answering(model, settings))
            trial.model = model.label
        channel = EvalChannel()
        events: list[dict[str, Any]] = []
        try:
            gateway = self.gateway(settings, model=instance, channels=[channel], clock=self.clock)
        except ConfigError as exc:
            trial.error = f"the gateway could not be built: {exc}"
            return trial
        drain = 5.0
        try:
            await gateway.start()
            # Routing is part of what a suite checks (expect: {agent: …}): route by meaning from the first turn,
            # not by triggers until the encoder happens to be ready (an evaluation may wait; a gateway does not).
            await asyncio.to_thread(gateway.router.prepare, ENCODER_WAIT_S)
            seat = Seat(gateway, channel, Sender(id=case.user, name=case.user), self.clock, chat_id=case.id)
            for index, turn in enumerate(case.turns, 1):
                result, turn_log = await self._turn(gateway, seat, turn, index, model, folder)
                trial.turns.append(result)
                events += [e.as_dict() for e in turn_log.events]
                if result.error:  # the rest cannot be played: their checks count, as not held
                    trial.turns += [unplayed(later, n, index) for n, later in enumerate(case.turns, 1) if n > index]
                    break
            if isinstance(instance, ScriptedModel):
                trial.checks.append(script_check(instance.remaining, instance.errors))
        except Exception as exc:  # a crash in the bot under test is a failed trial, not a failed run
            log.exception("eval %s: case %s failed", self.suite.name, case.id)
            trial.error = f"{type(exc).__name__}: {exc}"
        except asyncio.CancelledError:  # the run is stopped: what the gateway is doing is not waited for
            drain = STOPPED_DRAIN_S
            raise
        finally:
            try:
                await gateway.stop(timeout=drain)
            except Exception:
                log.exception("eval %s: case %s: the gateway did not stop cleanly", self.suite.name, case.id)
        trial.passed = (
            trial.error is None
            and all(t.passed for t in trial.turns)
            and all(c.passed is not False for c in trial.checks)
        )
        if not trial.passed:
            trial.events = events
        trial.duration_ms = round((self.clock.monotonic() - started) * 1000, 3)
        if self.options.keep is not None:
            shutil.copytree(folder, self.options.keep / folder.name, dirs_exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        return trial

    async def _turn(
        self, gateway: GatewayUnderTest, seat: Seat, turn: Turn, index: int, model: ModelChoice, folder: Path
    ) -> tuple[TurnResult, TurnLog]:
        said = _said(turn)
        result = TurnResult(index=index, action=said)
        workspace = folder / "workspace"
        try:
            if turn.user is not None:
                here = folder / "attached" / str(index)
                files = [await self._attached(here / str(k), name) for k, name in enumerate(turn.attach)]
                turn_log = await seat.say(turn.user, files)
            else:
                turn_log = await seat.press(label=turn.press, choice=turn.choice)
        except TurnError as exc:
            result.error = str(exc)
            return result, TurnLog()

        def cost(name: str, usage: Usage) -> float:
            return float(gateway.budgets.cost(name, usage)) if gateway.budgets is not None else 0.0

        # The agents' model calls and the router's (a model asked to route: ``model_call`` of the route event).
        calls = [e.data for e in turn_log.of("llm_call")]
        calls += [e.data["model_call"] for e in turn_log.of("route") if isinstance(e.data.get("model_call"), dict)]
        for d in calls:
            usage = Usage(
                input_tokens=int(d.get("input_tokens") or 0),
                output_tokens=int(d.get("output_tokens") or 0),
                cached_tokens=int(d.get("cached_tokens") or 0),
            )
            result.model_calls += 1
            result.input_tokens += usage.input_tokens
            result.output_tokens += usage.output_tokens
            result.cached_tokens += usage.cached_tokens
            result.cost += cost(str(d.get("model") or ""), usage)
        result.agent = turn_log.agent
        result.tools = tools_of(turn_log)
        result.interrupts = [
            str(e.data.get("kind")) for e in turn_log.of("interrupt") if e.data.get("status") == "raised"
        ]
        result.handoffs = [
            f"{e.agent} → {e.data.get('target')}" for e in turn_log.of("handoff") if e.data.get("status") == "accepted"
        ]
        result.answer = turn_log.answer[:RESULT_CHARS]
        result.status = turn_log.status
        result.latency_ms = round(turn_log.latency_ms, 3)

        async def judged(check: JudgeCheck, answer: str) -> CheckResult:
            return await self._judge(check, turn.user or said, answer, model, cost)

        context = CheckContext(workspace=workspace, memories=gateway.repos.replay.memories, judge=judged)
        result.checks = await check_turn(turn.expect, turn_log, context)
        return result, turn_log

    async def _attached(self, where: Path, name: str) -> Path:
        """A copy of the suite's file ``name`` in the trial's folder (read from the suite's folder only)."""
        try:
            data = await asyncio.to_thread(read_confined, self.base_dir, name, ATTACH_BYTES)
        except OutsideError as exc:
            raise TurnError(f"attach: {exc}") from None
        where.mkdir(parents=True, exist_ok=True)
        copy = where / Path(name).name
        copy.write_bytes(data)
        return copy

    async def _judge(
        self, check: JudgeCheck, said: str, answer: str, model: ModelChoice, cost: Callable[[str, Usage], float]
    ) -> CheckResult:
        threshold = check.threshold if check.threshold is not None else self.suite.judge.threshold
        given = self.options.judge
        if check.model is None and isinstance(given, Model):
            return await judge(
                given, given.name, rubric=check.rubric, said=said, answer=answer, threshold=threshold, cost=cost
            )
        spec = check.model or given or self.suite.judge.model or (model.label if model.make is None else None)
        expected = f"{check.rubric!r} scores ≥ {threshold:g}"
        if not isinstance(spec, str):
            seen = f"no judge for the {model.label} model: skipped; give --judge provider/name or judge.model"
            return CheckResult(check="judge", expected=expected, passed=None, seen=seen)
        assert self._judges is not None
        try:
            found = self._judges.get(spec)
        except ConfigError as exc:
            return CheckResult(check="judge", expected=expected, passed=False, seen=f"the judge {spec}: {exc}")
        label = OFFLINE if spec == OFFLINE else spec
        return await judge(found, label, rubric=check.rubric, said=said, answer=answer, threshold=threshold, cost=cost)


def answering(model: ModelChoice, settings: Settings) -> str:
    """The label of the model that answers with ``settings``: ``model``'s own unless they chose another (no key:
    the offline model; a trusted suite's ``model`` settings)."""
    actual = configured(settings).label
    return model.label if actual == model.label or actual.endswith(f"/{model.label}") else actual


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
