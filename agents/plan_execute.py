"""Plan-Execute-Replan: plan, (optionally) get the plan approved, execute step by step, re-plan.

Phases, each a checkpoint when the run pauses:
- ``plan``: the planner returns ``{"steps": [...]}`` (structured output), validated;
  an invalid plan is repaired once, then the run fails clearly;
- ``approval``: a ``plan_approval`` interrupt (approve / edit / reject); any
  text is feedback and the plan is revised (a new plan version; presses for
  an older version are refused by the gateway because that prompt is closed);
- ``execute``: one step at a time with the ReAct runner (its confirmations
  and questions pause *inside* the step and resume there);
- ``replan``: after each step, ``{"action": "plan", "steps": [...]}`` for the
  remaining steps or ``{"action": "respond", "answer": "..."}``.
At most ``max_steps`` steps run: a plan is cut to the steps that can still run
(the prompt says so, and the rest are listed as not done in the answer), so the
plan shown for approval is exactly what runs.  A re-plan whose remaining steps
are not all among the approved ones is a new plan version, approved again (as
``approval`` asks); a re-plan that only drops approved steps goes on.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema

from agents.context import RunContext
from agents.messages import Message
from agents.react import ReactRunner
from agents.resolutions import PlanDecision, Resolution, answer_text
from agents.results import Choice, FinalAnswer, InterruptRequest, Resumable, RunResult

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}},
    "required": ["steps"],
}
REPLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["plan", "respond"]},
        "steps": {"type": "array", "items": {"type": "string"}},
        "answer": {"type": "string"},
    },
    "required": ["action"],
}
PLANNER = (
    "You are a planner. Break the user's request into a short list of concrete steps (at most {limit}), each one "
    'an instruction an assistant with tools can carry out. Reply with JSON: {{"steps": ["..."]}}.'
)
REPLANNER = (
    "You are a re-planner. Given the goal, the plan and the results of the completed steps, either reply "
    '{"action": "respond", "answer": "..."} with the final answer for the user (in their language) when '
    'the goal is reached, or {"action": "plan", "steps": [...]} with the steps that remain. Keep the remaining '
    "steps word for word unless the results require a change: the user approved them as written, and a changed "
    "plan is shown to them for approval again."
)
Approval = Literal["always", "never"] | int


def _text(messages: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(messages, 1))


class PlanError(Exception):
    """The planner could not produce a valid plan."""


class PlanExecuteRunner(Resumable):
    """Runs an agent that plans first; executes each step with a ReAct runner."""

    def __init__(
        self,
        name: str = "plan",
        system_prompt: str = "",
        *,
        approval: Approval = "always",
        max_steps: int = 10,
        progress: bool = True,
        executor: ReactRunner | None = None,
    ) -> None:
        self.name = name
        self.system_prompt = system_prompt
        self.approval = approval
        self.max_steps = max_steps
        self.progress = progress
        self.executor = executor or ReactRunner(f"{name}", system_prompt or "You carry out one step of a plan.")

    # -- entry points ---------------------------------------------------------------------

    async def run(self, ctx: RunContext, message: Message) -> RunResult:
        state: dict[str, Any] = {
            "phase": "plan",
            "goal": message.text or "",
            "messages": [message.model_dump(mode="json", exclude_defaults=True)],
            "plan": [],
            "version": 0,
            "done": [],
            "executed": 0,
        }
        return await self._plan(ctx, state, feedback=None)

    async def resume(self, ctx: RunContext, state: dict[str, Any], resolution: Resolution) -> RunResult:
        phase = state.get("phase")
        if phase == "approval":
            choice = resolution.choice
            if choice == "approve":
                state["approved"] = list(state["plan"])
                return await self._execute(ctx, state)
            if choice == "reject":
                if state["done"]:
                    return self._partial(state, note="The revised plan was rejected")
                return self._final(state, "Plan rejected; nothing was done.")
            decided = (
                resolution if isinstance(resolution, PlanDecision) else PlanDecision(answer=answer_text(resolution))
            )
            feedback = decided.feedback or (decided.answer if choice != "edit" else None)
            if not feedback:
                return self._ask_feedback(state)
            return await self._plan(ctx, state, feedback=str(feedback))
        if phase == "feedback":
            return await self._plan(ctx, state, feedback=answer_text(resolution) or "")
        if phase == "execute":
            inner = await self.executor.resume(ctx, state["inner"], resolution)
            outcome = await self._after_step(ctx, state, inner)
            return outcome if outcome is not None else await self._execute(ctx, state)
        raise ValueError(f"cannot resume a plan in phase {phase!r}")

    # -- planning -------------------------------------------------------------------------

    async def _plan(self, ctx: RunContext, state: dict[str, Any], feedback: str | None) -> RunResult:
        request = f"Request: {state['goal']}"
        if feedback and state["plan"]:
            request += f"\n\nCurrent plan:\n{_text(state['plan'])}\n\nRevise it with this feedback: {feedback}"
        try:
            steps = await self._structured(ctx, request, PLANNER.format(limit=self.max_steps), PLAN_SCHEMA)
        except PlanError as exc:
            return self._final(state, f"I could not make a plan: {exc}")
        self._fit(state, steps["steps"])
        state.update(phase="approval", version=state["version"] + 1)
        if self._needs_approval(state["plan"]):
            return self._ask_approval(state, "Plan")
        state["approved"] = list(state["plan"])
        return await self._execute(ctx, state)

    def _fit(self, state: dict[str, Any], steps: list[Any]) -> None:
        """``steps`` as the plan, cut to the steps that may still run (the rest kept apart, never run)."""
        room = max(0, self.max_steps - state["executed"])
        found = [str(s) for s in steps]
        state["plan"], state["beyond"] = found[:room], found[room:]

    def _ask_approval(self, state: dict[str, Any], title: str) -> InterruptRequest:
        state["phase"] = "approval"
        prompt = f"📋 {title} (v{state['version']}):\n{_text(state['plan'])}"
        if state["done"]:
            done = "\n".join(f"✓ {d['step']}" for d in state["done"])
            prompt = f"Done so far:\n{done}\n\n{prompt}"
        if state.get("beyond"):
            prompt += (
                f"\n\n(The planner proposed {len(state['plan']) + len(state['beyond'])} steps; at most "
                f"{self.max_steps} run, so only these {len(state['plan'])} would.)"
            )
        return InterruptRequest(
            kind="plan_approval",
            prompt=prompt,
            choices=(
                Choice(label="✅ Approve", value="approve"),
                Choice(label="✏️ Edit", value="edit"),
                Choice(label="❌ Reject", value="reject"),
            ),
            payload={"plan": state["plan"], "version": state["version"]},
            state=state,
            agent=self.name,
        )

    def _needs_approval(self, plan: list[str]) -> bool:
        if self.approval == "always":
            return True
        if self.approval == "never":
            return False
        return len(plan) > int(self.approval)

    def _ask_feedback(self, state: dict[str, Any]) -> InterruptRequest:
        state["phase"] = "feedback"
        return InterruptRequest(
            kind="ask_user",
            prompt="✏️ What should I change in the plan?",
            payload={"question": "plan feedback", "version": state["version"]},
            state=state,
            agent=self.name,
        )

    async def _structured(self, ctx: RunContext, request: str, system: str, schema: dict[str, Any]) -> Any:
        """One structured call, validated; one repair with the errors, then :class:`PlanError`."""
        messages = [*ctx.history, Message.user(request)]
        error = ""
        for attempt in range(2):
            prompt = ctx.system(system)
            if attempt:
                prompt += f"\n\nYour previous reply was invalid: {error}. Fix it."
            started = ctx.clock()
            response = await ctx.model.request(messages, system=prompt, response_schema=schema)
            ctx.model_called(self.name, response, started)
            data = response.parsed
            if data is None and response.text:
                try:
                    data = json.loads(response.text)
                except ValueError as exc:
                    error = f"not JSON ({exc})"
                    continue
            try:
                jsonschema.validate(data, schema)
            except jsonschema.ValidationError as exc:
                error = exc.message
                continue
            return data
        raise PlanError(f"the model's plan was invalid twice ({error})")

    # -- execution ------------------------------------------------------------------------

    async def _execute(self, ctx: RunContext, state: dict[str, Any]) -> RunResult:
        while state["plan"]:
            step = state["plan"][0]
            state.update(phase="execute", current=step)
            brief = self._brief(state, step)
            result = await self.executor.run(ctx, Message.user(brief))
            outcome = await self._after_step(ctx, state, result, replan=False)
            if outcome is not None:
                return outcome
            try:
                decision = await self._replan(ctx, state)
            except PlanError as exc:
                return self._partial(state, note=str(exc))
            if decision is not None:
                return decision
        if state.get("beyond"):
            return self._partial(state)
        return await self._respond_from_results(ctx, state)

    def _brief(self, state: dict[str, Any], step: str) -> str:
        done = "\n".join(f"- {d['step']}: {d['result']}" for d in state["done"]) or "(none yet)"
        return f"Overall goal: {state['goal']}\nCompleted steps:\n{done}\n\nDo this step now: {step}"

    async def _after_step(
        self, ctx: RunContext, state: dict[str, Any], result: RunResult, replan: bool = True
    ) -> RunResult | None:
        if isinstance(result, InterruptRequest):
            # A confirmation or question inside the step: pause here, resume inside the step.
            state.update(phase="execute", inner=result.state)
            return result.model_copy(update={"state": state, "agent": self.name})
        step = state["plan"].pop(0)
        # Plan agents get no handoff tools, so a step ends in an answer.
        text = result.text if isinstance(result, FinalAnswer) else f"(handed off to {result.target}: {result.reason})"
        state["done"].append({"step": step, "result": text[:2000]})
        state["executed"] += 1
        state.pop("inner", None)
        if self.progress:
            total = state["executed"] + len(state["plan"])
            await ctx.emit(f"✅ Step {state['executed']}/{total}: {step}")
        if not replan:
            return None
        try:
            decision = await self._replan(ctx, state)
        except PlanError as exc:
            return self._partial(state, note=str(exc))
        return decision if decision is not None else await self._execute(ctx, state)

    async def _replan(self, ctx: RunContext, state: dict[str, Any]) -> RunResult | None:
        done = "\n".join(f"- {d['step']}: {d['result']}" for d in state["done"])
        request = f"Goal: {state['goal']}\nRemaining plan:\n{_text(state['plan']) or '(empty)'}\nCompleted:\n{done}"
        decision = await self._structured(ctx, request, REPLANNER, REPLAN_SCHEMA)
        if decision["action"] == "respond" and decision.get("answer"):
            return self._final(state, str(decision["answer"]))
        # Steps nobody approved do not run unasked: a checkpoint from before "approved" counts its plan approved.
        approved = list(state.get("approved", state["plan"]))
        self._fit(state, decision.get("steps") or [])
        kept = all(step in approved for step in state["plan"])
        if kept or not self._needs_approval(state["plan"]):
            state["approved"] = approved if kept else list(state["plan"])
            return None
        state["version"] += 1
        return self._ask_approval(state, "Revised plan")

    async def _respond_from_results(self, ctx: RunContext, state: dict[str, Any]) -> RunResult:
        summary = "\n".join(f"• {d['step']}: {d['result']}" for d in state["done"])
        return self._final(state, summary or "The plan had no steps left.")

    def _partial(self, state: dict[str, Any], note: str = "") -> FinalAnswer:
        done = "\n".join(f"• {d['step']}: {d['result']}" for d in state["done"]) or "(nothing)"
        left_text = _text([*state["plan"], *state.get("beyond", [])])
        why = note or f"I reached the limit of {self.max_steps} steps"
        text = f"⚠️ {why}, so this is a partial answer.\nDone so far:\n{done}"
        if left_text:
            text += f"\nNot done:\n{left_text}"
        return self._final(state, text)

    def _final(self, state: dict[str, Any], text: str) -> FinalAnswer:
        return FinalAnswer(text=text, messages=(Message.assistant(text, agent=self.name),), agent=self.name)
