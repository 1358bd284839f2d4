"""A simulated person (a ``simulate:`` case): a model plays the person from a goal, turn by turn, through the seat
a written turn goes through (so routing, approvals, plans and questions are played as in a chat), until it says
it is done, or the turns or the cost run out; then the conversation's checks.

Each turn the simulator gets the goal, the persona and the transcript so far (what the bot wrote, with the labels
of a prompt's buttons) and answers with one JSON action: ``{"say": …}``, ``{"press": LABEL}`` or ``{"done": true,
"reached": …, "reason": …}``.  An answer that is not an action is asked for again once (saying what was wrong),
then the trial is an error (the simulator failed, not the bot).  A press of a button the bot does not show is told
back once, then fails the case.  Its calls count in the trial's model calls, tokens and cost (shown apart as the
simulator's), toward ``--budget`` and toward the conversation's ``max_cost``.  The format is
:mod:`bot.evals.simulate_format`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.messages import Message
from agents.models.base import Model, ModelResponse, Usage
from agents.models.scripted import ScriptedModel
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.evals.checks import CheckContext, check_turn
from bot.evals.judge import json_object
from bot.evals.models import OFFLINE, SCRIPTED, JudgeModels, ModelChoice, choose
from bot.evals.results import JUDGE_FAILED, CheckResult, SimulatorRecord, TrialResult, TurnResult
from bot.evals.seat import GatewayUnderTest, Seat, TurnLog
from bot.evals.simulate_format import ScriptedAction, Simulate
from bot.evals.suite import Case, Expect, JudgeCheck, Suite, Turn

SYSTEM = (
    "You play a person chatting with a chat bot, to reach a goal. Stay in character: write as the persona would "
    "(short, in their own words), and never mention these instructions or that you are simulated. Read the "
    "conversation so far and answer with one JSON object only, one of:\n"
    '{"say": "your next message to the bot"}\n'
    '{"press": "the label of a button the bot shows now"}\n'
    '{"done": true, "reached": true, "reason": "why the goal is reached"}  (reached false: it cannot be)\n'
    "Answer the bot's questions, and approve or refuse what it asks, as this person would. Say done as soon as "
    "the goal is reached."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "say": {"type": "string"},
        "press": {"type": "string"},
        "done": {"type": "boolean"},
        "reached": {"type": "boolean"},
        "reason": {"type": "string"},
    },
}
BOT_CHARS = 2000
"""A bot message in the transcript is cut here."""


@dataclass(frozen=True)
class Action:
    say: str | None = None
    press: str | None = None
    done: bool = False
    reached: bool = True
    reason: str = ""


def action_of(parsed: Any, text: str) -> Action | str:
    """The simulator's answer as an action; or what is wrong with it.  JSON in a fenced block, or with words
    around it, is taken (repaired) as it is."""
    data = json_object(parsed, text)
    if not isinstance(data, dict):
        return f"not a JSON object: {text.strip()[:200]!r}"
    given = [k for k in ("say", "press", "done") if data.get(k) not in (None, False, "")]
    if len(given) != 1:
        return f"not one action (say, press or done): {json.dumps(data, ensure_ascii=False)[:200]}"
    key = given[0]
    if key == "done":
        if data["done"] is not True or not isinstance(data.get("reached", True), bool):
            return f"done is true, reached true or false: {json.dumps(data, ensure_ascii=False)[:200]}"
        return Action(done=True, reached=data.get("reached", True), reason=str(data.get("reason") or ""))
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        return f"{key} is text: {json.dumps(data, ensure_ascii=False)[:200]}"
    return Action(say=value.strip()) if key == "say" else Action(press=value.strip())


# -- which model plays the person -----------------------------------------------------------------------------


def simulator_spec(case: Case, model: ModelChoice) -> str:
    """The simulator of ``case`` run against ``model``: ``simulate.model``; else, when the model under test is
    handed in (``--model scripted``), the case's scripted simulator; else the model under test."""
    assert case.simulate is not None
    if case.simulate.model:
        return case.simulate.model
    return SCRIPTED if model.make is not None else model.label


def cost_bound(case: Case) -> float | None:
    """Where the conversation stops: ``simulate.max_cost``, else the case's own ``max_cost``."""
    assert case.simulate is not None
    bound = case.simulate.max_cost
    return bound if bound is not None else getattr(case, "max_cost", None)


def scripted_simulator(script: Sequence[str | ScriptedAction]) -> ScriptedModel:
    steps = []
    for entry in script:
        if isinstance(entry, str):
            steps.append(ModelResponse(text=entry, model=SCRIPTED))
            continue
        answer = entry.model_dump(exclude_none=True, exclude={"usage"})
        usage = Usage(**entry.usage.model_dump()) if entry.usage is not None else Usage()
        steps.append(ModelResponse(text=json.dumps(answer), parsed=answer, usage=usage, model=SCRIPTED))
    return ScriptedModel(steps, name=SCRIPTED)


def simulator_for(case: Case, model: ModelChoice, get: Callable[[str], Model]) -> tuple[Model, str]:
    """The simulator model and its label (``get``: a model by name, the judges' own); :class:`ConfigError` when it
    cannot play."""
    assert case.simulate is not None
    spec = simulator_spec(case, model)
    if spec == SCRIPTED:
        if case.simulate.script is None:
            raise ConfigError(f"case {case.id}: the scripted simulator has no simulate.script")
        return scripted_simulator(case.simulate.script), SCRIPTED
    if spec == OFFLINE:
        raise ConfigError("the offline model cannot play a person: give simulate.model provider/name")
    return get(spec), spec


async def simulator_problems(
    suite: Suite,
    models: list[ModelChoice],
    settings_of: Callable[[Case, ModelChoice], Settings],
    *,
    replaying: bool = False,
) -> list[str]:
    """Set-up mistakes of the ``simulate:`` cases, found before any model call: a simulator that cannot play
    (offline, scripted without a script, a mistyped or keyless model: not asked when ``replaying`` a cassette)
    and a ``max_cost`` that could not stop the conversation (a model without a price: its calls would cost $0)."""
    problems: list[str] = []
    for case in suite.cases:
        if case.simulate is None:
            continue
        for model in models:
            spec = simulator_spec(case, model)
            where = f"case {case.id} ({model.label})"
            if spec == OFFLINE:
                problems.append(f"{where}: the offline model cannot play a person; give simulate.model provider/name")
                continue
            if spec == SCRIPTED:
                if case.simulate.script is None:
                    problems.append(f"{where}: the scripted simulator has no simulate.script")
                continue
            try:
                settings = settings_of(case, model)
            except ConfigError:
                continue  # the case's own config: it fails alone
            judges = JudgeModels(
                settings.model, timezone=settings.jobs.timezone, inline_max_mb=settings.media.inline_max_mb
            )
            try:
                choose(spec)
                if not replaying:
                    judges.get(spec)
            except ConfigError as exc:
                problems.append(f"{where}: the simulator {spec}: {exc}")
                continue
            finally:
                await judges.aclose()
            bound = cost_bound(case)
            tested = case.simulate.max_cost is not None and model.make is None and model.label != OFFLINE
            priced = [spec] + ([model.label] if tested else [])  # a case's own max_cost: its check says it
            unpriced = [name for name in dict.fromkeys(priced) if settings.budgets.price(name) is None]
            if bound is not None and unpriced:
                problems.append(
                    f"{where}: max_cost ${bound:g} could not stop the conversation: budgets.prices has no price "
                    f"for {', '.join(unpriced)} (its calls would count $0)"
                )
    return problems


# -- the conversation -----------------------------------------------------------------------------------------


@dataclass
class Stage:
    """What a simulated conversation is played on (the trial gives it)."""

    seat: Seat
    gateway: GatewayUnderTest
    workspace: Path
    base_dir: Path
    play: Callable[[Turn, int], Awaitable[tuple[TurnResult, TurnLog]]]
    """Plays a turn (number from 1) as a written one is played, its checks made."""
    judged: Callable[[JudgeCheck, str, str], Awaitable[CheckResult]]
    """Scores (the check, what the person said, the answer) with the trial's judge."""


@dataclass
class Conversation(TurnLog):
    """The whole conversation as one turn, for the end checks: every event (tools, pauses, handoffs, memory at
    any point) and notice; the last turn's answer and status; every prompt."""

    last: TurnLog = field(default_factory=TurnLog)

    @property
    def answer(self) -> str:
        return self.last.answer

    @property
    def status(self) -> str | None:
        return self.last.status


def transcript_lines(turn: Turn, log: TurnLog, error: str | None) -> list[str]:
    lines = [f"Person: {turn.user}" if turn.user is not None else f"Person pressed: {turn.press}"]
    if error:
        lines.append(f"(this could not be done: {error})")
    for message in log.messages:
        if message.kind != "text" or message.edit_of is not None or not message.text:
            continue
        text = message.text if len(message.text) <= BOT_CHARS else message.text[: BOT_CHARS - 1] + "…"
        labels = [b.label for row in message.buttons for b in row]
        lines.append(f"Bot: {text}" + (f"\n  [buttons: {', '.join(json.dumps(x) for x in labels)}]" if labels else ""))
    return lines


class Simulation:
    """One simulated conversation of a trial (its turns, checks and simulator record go in ``trial``)."""

    def __init__(self, case: Case, stage: Stage, simulator: Model, label: str, trial: TrialResult) -> None:
        assert case.simulate is not None
        self.sim: Simulate = case.simulate
        self.stage = stage
        self.simulator = simulator
        self.trial = trial
        self.record = trial.simulator = SimulatorRecord(model=label)
        self.bound = cost_bound(case)
        self.lines: list[str] = []
        self.logs: list[TurnLog] = []

    def spent(self) -> float:
        """The conversation's estimated cost so far: its turns (with their judges) and the simulator."""
        judged = sum(c.judge.cost for t in self.trial.turns for c in t.checks if c.judge is not None)
        return sum(t.cost for t in self.trial.turns) + judged + self.record.cost

    async def run(self) -> list[TurnLog]:
        """Play it through; the turns' logs (their trace events are the trial's)."""
        sim, stage = self.sim, self.stage
        outcome, ended, feedback, pressed_wrong = "", "", "", False
        if sim.first is not None and not await self._play(Turn(user=sim.first, expect=sim.every_turn)):
            outcome, ended = "unplayable", f"turn 1 could not be played: {self.trial.turns[-1].error}"
        while not outcome:
            played = len(self.trial.turns)
            if self.bound is not None and self.spent() >= self.bound:
                spent = f"${self.spent():.4f} spent"
                outcome, ended = "cost", f"max_cost ${self.bound:g} was reached ({spent}) after {played} turns"
                break
            action = await self._ask(feedback, last=played >= sim.max_turns)
            if action is None:
                self.record.ended = "the simulator failed"
                return self.logs  # the trial's error says how
            if action.done:
                outcome = "reached" if action.reached else "gave up"
                ended = f"{'done' if action.reached else 'gave up'} after {played} turns: {action.reason or '…'}"
            elif played >= sim.max_turns:
                outcome, ended = "turns", f"the goal was not reached in {played} turns"
            elif self.bound is not None and self.spent() >= self.bound:
                continue  # stopped at the top, before the turn
            elif action.press is not None and not stage.seat.pressable(action.press):
                shown = ", ".join(json.dumps(b) for b in stage.seat.buttons()) or "none"
                if pressed_wrong:
                    what = f"pressed {action.press!r} again, a button the bot does not show (it shows: {shown})"
                    outcome, ended = "press", what
                pressed_wrong = True
                feedback = f"There is no button {action.press!r} to press (the buttons shown now: {shown})."
            else:
                feedback = ""
                turn = Turn(user=action.say, press=action.press, expect=sim.every_turn)
                if not await self._play(turn):
                    outcome, ended = (
                        "unplayable",
                        f"turn {played + 1} could not be played: {self.trial.turns[-1].error}",
                    )
        self.record.ended = ended
        await self._end_checks(outcome, ended)
        return self.logs

    async def _play(self, turn: Turn) -> bool:
        result, log = await self.stage.play(turn, len(self.trial.turns) + 1)
        self.trial.turns.append(result)
        self.logs.append(log)
        self.lines += transcript_lines(turn, log, result.error)
        return result.error is None

    def prompt(self, feedback: str, last: bool) -> str:
        buttons = self.stage.seat.buttons()
        now = (
            "Buttons you can press now: " + ", ".join(json.dumps(b) for b in buttons)
            if buttons
            else "No buttons are shown now."
        )
        played = len(self.trial.turns)
        turns = (
            f"No turns are left ({played} played): answer done, with reached true or false."
            if last
            else f"This is turn {played + 1} of at most {self.sim.max_turns}."
        )
        parts = [
            f"<Goal>\n{self.sim.goal}\n</Goal>",
            f"<Persona>\n{self.sim.persona or 'an ordinary person'}\n</Persona>",
            "<Conversation>\n"
            + ("\n".join(self.lines) or "(nothing yet: write the first message)")
            + "\n</Conversation>",
            now,
            turns,
        ]
        return "\n".join(parts + ([feedback] if feedback else []) + ["Your action, as one JSON object:"])

    async def _ask(self, feedback: str, last: bool) -> Action | None:
        """The simulator's next action (asked again once when its answer is not one); None: it failed."""
        label = self.record.model
        messages = [Message.user(self.prompt(feedback, last))]
        problem = ""
        for _attempt in range(2):
            try:
                response = await self.simulator.request(messages, system=SYSTEM, response_schema=SCHEMA)
            except Exception as exc:  # an endpoint error, a scripted simulator's script run out
                self.trial.error = f"the simulator {label} failed: {exc}"
                return None
            self._count(response)
            action = action_of(response.parsed, response.text or "")
            if isinstance(action, Action):
                return action
            problem = action
            messages += [
                Message.assistant(response.text or "(nothing)"),
                Message.user(f"That answer is {problem}. Answer with one JSON object only: say, press or done."),
            ]
        self.trial.error = f"the simulator {label} did not answer with an action (asked twice): {problem}"
        return None

    def _count(self, response: ModelResponse) -> None:
        usage = response.usage
        self.record.calls += 1
        self.record.input_tokens += usage.input_tokens
        self.record.output_tokens += usage.output_tokens
        self.record.cached_tokens += usage.cached_tokens
        budgets = self.stage.gateway.budgets
        if response.from_cache:  # the response cache answered: no call reached the model
            self.record.cached_calls += 1
        elif budgets is not None:
            self.record.cost += float(budgets.cost(response.model or self.record.model, usage))

    async def _end_checks(self, outcome: str, ended: str) -> None:
        """The goal check (the person said it is reached, or ``success`` holds), ``expect`` on the whole
        conversation and ``success``, into the trial's checks."""
        sim, stage = self.sim, self.stage
        transcript = "\n".join(self.lines) or "(no turn was played)"
        said = f"(a whole conversation; the person's goal: {sim.goal})"
        success = []
        for check in sim.success:
            result = await stage.judged(check, said, transcript)
            failed = result.passed is False and result.seen.startswith(JUDGE_FAILED)
            success.append(result.model_copy(update={"check": "success", "error": failed}))
        holds = bool(success) and all(c.passed for c in success)
        played = len(self.trial.turns)
        # Reached: the person said so (success, when given, judges it too); running out of turns or cost, or
        # giving up, is no failure when success holds; a wrong press twice or a turn not played is.
        passed = outcome == "reached" or (holds and outcome in ("turns", "cost", "gave up"))
        seen = ended + ("; success holds" if holds and outcome != "reached" else "")
        goal = CheckResult(check="goal", expected="the person reaches the goal", passed=passed, seen=seen)
        whole = Conversation(
            messages=[m for log in self.logs for m in log.messages],
            events=[e for log in self.logs for e in log.events],
            latency_ms=sum(log.latency_ms for log in self.logs),
            waiting=self.logs[-1].waiting if self.logs else False,
            prompt="\n".join(log.prompt for log in self.logs if log.prompt),
            last=self.logs[-1] if self.logs else TurnLog(),
        )

        async def judged(check: JudgeCheck, answer: str) -> CheckResult:
            return await stage.judged(check, said, transcript)

        context = CheckContext(
            workspace=stage.workspace,
            memories=stage.gateway.repos.replay.memories,
            judge=judged,
            base_dir=stage.base_dir,
            index=played,
            said=said,
        )
        ends = await check_turn(sim.expect, whole, context) if sim.expect != Expect() else []
        self.trial.checks += [goal, *ends, *success]


def typed_in(case: Case, trial: TrialResult) -> list[str]:
    """What the person typed in a trial (the redaction step takes a secret found there out everywhere): the
    case's messages, and a simulated person's goal and generated messages."""
    typed = [t.user for t in case.turns if t.user]
    if case.simulate is not None:
        typed += [case.simulate.goal, *([case.simulate.first] if case.simulate.first else [])]
        typed += [t.action.removeprefix("user: ") for t in trial.turns if t.action.startswith("user: ")]
    return typed
