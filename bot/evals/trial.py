"""One trial: a case played against one model on a gateway of its own, turn by turn, each turn checked.

The gateway is the real one (:class:`bot.gateway.app.Gateway`, handed in as a factory) on the trial's own SQLite
store and workspace; the person's side is :class:`bot.evals.seat.Seat`.  A turn that cannot be played (no prompt
to press: the model did not pause where the case expects) has its checks counted as not held, so every model is
scored on the same number of checks, and the case goes on with the next turn: one difference hides no later one.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agents.messages import Message
from agents.models.base import Model, Usage
from agents.models.scripted import ScriptedModel
from bot.clock import Clock
from bot.config.model import ModelSection
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.evals.cache import RunCache, TrialCache
from bot.evals.case_checks import check_case, has_case_checks, models_called, priced
from bot.evals.checks import CheckContext, check_turn, script_check, tools_of
from bot.evals.confine import OutsideError, read_confined
from bot.evals.judge import judge
from bot.evals.models import OFFLINE, JudgeModels, ModelChoice, configured
from bot.evals.pycheck import Transcript, transcript
from bot.evals.results import RESULT_CHARS, CheckResult, TrialResult, TurnResult
from bot.evals.seat import EvalChannel, GatewayFactory, GatewayUnderTest, Seat, TurnError, TurnLog
from bot.evals.simulate import Simulation, Stage, simulator_for
from bot.evals.suite import Case, JudgeCheck, Suite, Turn
from bot.events import Sender
from bot.redaction import Redaction

log = logging.getLogger(__name__)

TrialSettings = Callable[[Case, ModelChoice, Path, Path], Settings]
"""A trial's settings: the case, the model, its data folder and its workspace."""

ENCODER_WAIT_S = 120.0
"""How long a trial waits for the sentence encoder (loaded once per process) before routing without it."""

STOPPED_DRAIN_S = 0.5
"""How long a trial's gateway may finish what it does when the run is stopped (SIGTERM, SIGINT)."""

ATTACH_BYTES = 64 * 1024 * 1024
"""The largest file a turn attaches."""


def not_held(turn: Turn, seen: str) -> list[CheckResult]:
    """The checks of a turn that could not be played, each failed (an entry of a list or mapping counts as one), so
    a model whose turn could not be played has as many checks as one whose turn was."""
    checks = []
    for name, value in turn.expect.model_dump(exclude_defaults=True, exclude={"pairwise"}).items():
        count = len(value) if isinstance(value, list | dict) and name != "answer" else 1
        checks += [CheckResult(check=name, expected="(not played)", passed=False, seen=seen)] * count
    return checks


def _said(turn: Turn) -> str:
    if turn.user is not None:
        return f"user: {turn.user}" + (f" (+{len(turn.attach)} files)" if turn.attach else "")
    return f"press: {turn.press}" if turn.press is not None else f"choice: {turn.choice}"


def answering(model: ModelChoice, section: ModelSection) -> str:
    """The label of the model that answers with the ``model`` section ``section``: ``model``'s own unless it
    chose another (no key: the offline model; a trusted suite's ``model`` settings)."""
    actual = configured(section).label
    return model.label if actual == model.label or actual.endswith(f"/{model.label}") else actual


class TrialPlayer:
    """Plays trials of one run (``Runner`` makes one when the run starts)."""

    def __init__(
        self,
        suite: Suite,
        base_dir: Path,
        gateway: GatewayFactory,
        settings_of: TrialSettings,
        *,
        judges: JudgeModels,
        given_judge: str | Model | None,
        clock: Clock,
        keep: Path | None,
        secrets: set[str],
        cache: RunCache | None = None,
    ) -> None:
        """``secrets``: the run's set of values to redact, added to as each trial's settings are read; ``cache``:
        the run's recorded answers (every model call of a trial, the judge's too, goes through it)."""
        self.suite = suite
        self.base_dir = base_dir
        self.gateway = gateway
        self.settings_of = settings_of
        self.judges = judges
        self.given_judge = given_judge
        self.clock = clock
        self.keep = keep
        self.secrets = secrets
        self.cache = cache

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
            settings = self.settings_of(case, model, data, workspace)
            instance = model.make(case) if model.make is not None else None
        except ConfigError as exc:
            trial.error = str(exc)
            return trial
        self.secrets |= {
            *settings.secrets(),
            *Redaction.configured(settings.model, settings.channels, settings.mcp).secrets,
        }
        if model.make is None:
            model = replace(model, label=answering(model, settings.model))
            trial.model = model.label
        channel = EvalChannel()
        events: list[dict[str, Any]] = []
        cache = self.cache.trial(case.id, model.label, attempt, folder) if self.cache is not None else None
        try:
            gateway = self.gateway(
                settings,
                model=instance,
                channels=[channel],
                clock=self.clock,
                wrap_models=cache.wrap if cache is not None else None,
            )
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
            if case.history:  # what the chat held before (a conversation replayed from traces)
                await gateway.runs.store.append(str(seat.chat), [Message.model_validate(m) for m in case.history])
            seen: list[Transcript] = []  # each turn as Python checks see it
            encoder = settings.routing.rule.encoder
            if case.simulate is not None:  # a model plays the person, from a goal (bot/evals/simulate.py)
                events += await self._simulated(case, model, trial, seat, gateway, folder, encoder, cache, seen)
            for index, turn in enumerate(case.turns, 1):
                if cache is not None:
                    cache.turn, missed = index, len(cache.missing)
                result, turn_log = await self._turn(
                    gateway, seat, turn, index, model, folder, earlier=tuple(seen), encoder=encoder, cache=cache
                )
                if cache is not None and len(cache.missing) > missed and not result.error:
                    result.error = cache.missing[missed]  # a replay's cassette lacks a request: an error, not a fail
                seen.append(transcript(index, turn.user or _said(turn), turn_log, workspace, seen))
                trial.turns.append(result)
                events += [e.as_dict() for e in turn_log.events]
                if result.error:  # its checks count, as not held; the case goes on with the next turn, so one
                    result.checks = not_held(turn, f"not played: {result.error}")  # difference hides no other
            if has_case_checks(case) and seen:  # max_cost, max_latency_ms, the case's own Python checks
                called = models_called(events, trial)
                trial.checks += await check_case(
                    case, trial, seen, base_dir=self.base_dir, models=called, priced=priced(settings)
                )
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
        if self.keep is not None:
            shutil.copytree(folder, self.keep / folder.name, dirs_exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        return trial

    async def _turn(
        self,
        gateway: GatewayUnderTest,
        seat: Seat,
        turn: Turn,
        index: int,
        model: ModelChoice,
        folder: Path,
        *,
        earlier: tuple[Transcript, ...] = (),
        encoder: str = "use",
        cache: TrialCache | None = None,
    ) -> tuple[TurnResult, TurnLog]:
        """One turn played and checked; ``earlier``: the case's turns before it (for Python checks), ``encoder``:
        the sentence encoder of ``answer.similar``; ``cache``: the trial's recorded answers (the judge's calls)."""
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
            if d.get("from_cache"):  # answered from the cache or a cassette: no call reached the model, no cost
                result.cached_calls += 1
            else:
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
            return await self._judge(check, turn.user or said, answer, model, cost, cache)

        context = CheckContext(
            workspace=workspace,
            memories=gateway.repos.replay.memories,
            judge=judged,
            base_dir=self.base_dir,
            index=index,
            said=turn.user or said,
            earlier=earlier,
            encoder=encoder,
        )
        result.checks = await check_turn(turn.expect, turn_log, context)
        return result, turn_log

    async def _simulated(
        self,
        case: Case,
        model: ModelChoice,
        trial: TrialResult,
        seat: Seat,
        gateway: GatewayUnderTest,
        folder: Path,
        encoder: str,
        cache: TrialCache | None,
        seen: list[Transcript],
    ) -> list[dict[str, Any]]:
        """A ``simulate:`` case played (its turns and checks go in ``trial``, each turn as Python checks see it in
        ``seen``); the trace events of its turns."""

        async def play(turn: Turn, index: int) -> tuple[TurnResult, TurnLog]:
            missed = len(cache.missing) if cache is not None else 0
            if cache is not None:
                cache.turn = index
            result, turn_log = await self._turn(
                gateway, seat, turn, index, model, folder, earlier=tuple(seen), encoder=encoder, cache=cache
            )
            if cache is not None and len(cache.missing) > missed and not result.error:
                result.error = cache.missing[missed]
            seen.append(transcript(index, turn.user or _said(turn), turn_log, folder / "workspace", seen))
            return result, turn_log

        def cost(name: str, usage: Usage) -> float:
            return float(gateway.budgets.cost(name, usage)) if gateway.budgets is not None else 0.0

        async def judged(check: JudgeCheck, said: str, answer: str) -> CheckResult:
            return await self._judge(check, said, answer, model, cost, cache)

        def get(spec: str) -> Model:
            return self.judges.get(spec) if cache is None else self.judges.cached(spec, cache.wrap)

        try:
            simulator, label = simulator_for(case, model, get)
        except ConfigError as exc:
            trial.error = str(exc)
            return []
        stage = Stage(seat, gateway, folder / "workspace", self.base_dir, play, judged)
        logs = await Simulation(case, stage, simulator, label, trial).run()
        return [e.as_dict() for turn_log in logs for e in turn_log.events]

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
        self,
        check: JudgeCheck,
        said: str,
        answer: str,
        model: ModelChoice,
        cost: Callable[[str, Usage], float],
        cache: TrialCache | None = None,
    ) -> CheckResult:
        threshold = check.threshold if check.threshold is not None else self.suite.judge.threshold
        given = self.given_judge
        if check.model is None and isinstance(given, Model):
            return await judge(
                given, given.name, rubric=check.rubric, said=said, answer=answer, threshold=threshold, cost=cost
            )
        spec = check.model or given or self.suite.judge.model or (model.label if model.make is None else None)
        expected = f"{check.rubric!r} scores ≥ {threshold:g}"
        if not isinstance(spec, str):
            seen = f"no judge for the {model.label} model: skipped; give --judge provider/name or judge.model"
            return CheckResult(check="judge", expected=expected, passed=None, seen=seen)
        try:
            found = self.judges.get(spec) if cache is None else self.judges.cached(spec, cache.wrap)
        except ConfigError as exc:
            return CheckResult(check="judge", expected=expected, passed=False, seen=f"the judge {spec}: {exc}")
        label = OFFLINE if spec == OFFLINE else spec
        return await judge(found, label, rubric=check.rubric, said=said, answer=answer, threshold=threshold, cost=cost)
