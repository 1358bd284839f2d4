"""The models an eval runs against, and the judge's.

A model is named as on the command line: ``offline`` (the labelled stand-in, no key), ``scripted`` (each case's
``script``: its answers in order, no network), or ``provider/name`` (``gemini/gemini-2.5-flash``,
``openai/gpt-4.1-mini``: through the configured keys and base URLs, as the bot would call it); a bare name is
the configured provider's.  The model under test is the gateway's main model; an agent file that names its own
``model:`` keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

from agents.messages import ToolCall
from agents.models.base import Model, ModelError, ModelResponse, Usage
from agents.models.offline import OfflineModel
from agents.models.scripted import ScriptedModel, Step
from bot.config.model import ModelSection
from bot.errors import ConfigError
from bot.evals.suite import Case, ScriptStep
from bot.models import PROVIDERS, ModelCatalog, ModelWrap, parse_spec

OFFLINE = "offline"
SCRIPTED = "scripted"


@dataclass(frozen=True)
class ModelChoice:
    """One model a suite runs against: its label in the results, the settings that select it, or the model
    itself (made per trial: a scripted model's answers are the case's)."""

    label: str
    settings: dict[str, Any] = field(default_factory=dict)
    make: Callable[[Case], Model] | None = None


def choose(spec: str) -> ModelChoice:
    """The model ``spec`` names (``offline``, ``scripted``, ``provider/name`` or a bare name)."""
    spec = spec.strip()
    if not spec:
        raise ConfigError("an empty model name")
    if spec == OFFLINE:
        return ModelChoice(OFFLINE, {"model": {"provider": OFFLINE, "fallbacks": []}})
    if spec == SCRIPTED:
        return ModelChoice(SCRIPTED, make=case_script)
    head, sep, rest = spec.partition("/")
    if sep and head in PROVIDERS and rest:
        return ModelChoice(spec, {"model": {"provider": head, "name": rest}})
    near = get_close_matches(head, PROVIDERS, n=1, cutoff=0.75) if sep else []
    if near:  # "opnai/gpt-4o" would be a model of that name at the configured provider, failing only when called
        raise ConfigError(
            f"{spec!r}: no provider {head!r}; did you mean {near[0]}/{rest}? (providers: {', '.join(PROVIDERS)})"
        )
    return ModelChoice(spec, {"model": {"name": spec}})


def configured(model: ModelSection) -> ModelChoice:
    """The configured main model (``model``: the ``model`` section), as it is (no settings changed)."""
    provider = model.main_provider()
    return ModelChoice(OFFLINE if provider == OFFLINE else f"{provider}/{model.name}")


def case_script(case: Case) -> Model:
    if case.script is None:
        raise ConfigError(f"case {case.id} has no script for the scripted model")
    return scripted(case.script)


def scripted(steps: list[ScriptStep], name: str = SCRIPTED) -> ScriptedModel:
    """A scripted model answering ``steps`` in order (tool call ids numbered by step, unique in the case)."""
    return ScriptedModel([_step(step, n, name) for n, step in enumerate(steps, 1)], name=name)


def _step(step: ScriptStep, n: int, name: str) -> Step:
    usage = Usage(**step.usage.model_dump()) if step.usage is not None else Usage()
    if step.error is not None:
        return ModelError(step.error)
    if step.text is not None:
        return ModelResponse(text=step.text, usage=usage, model=name)
    if step.json_value is not None:
        return ModelResponse(
            text=json.dumps(step.json_value, ensure_ascii=False), parsed=step.json_value, usage=usage, model=name
        )
    wanted = [(step.call, step.args)] if step.call is not None else [(c.name, c.args) for c in step.calls or []]
    calls = tuple(ToolCall(id=f"s{n}-{k}-{tool}", name=tool, args=args) for k, (tool, args) in enumerate(wanted))
    return ModelResponse(tool_calls=calls, usage=usage, model=name)


class JudgeModels:
    """Judge models by name, built once (through the configured keys and base URLs)."""

    def __init__(self, model: ModelSection, *, timezone: str, inline_max_mb: float) -> None:
        """``model``: the ``model`` section (keys, base URLs, the main provider); ``timezone`` and ``inline_max_mb``:
        as :class:`ModelCatalog` takes them."""
        self.config = model
        self.timezone = timezone
        self.inline_max_mb = inline_max_mb
        self._catalog: ModelCatalog | None = None
        self._made: dict[str, Model] = {}

    def get(self, spec: str) -> Model:
        """The model ``spec`` names; :class:`ConfigError` when it cannot be built."""
        if spec not in self._made:
            if spec == OFFLINE:
                self._made[spec] = OfflineModel()
            elif spec == SCRIPTED:
                raise ConfigError("a scripted model cannot judge: name a model with --judge or judge.model")
            else:
                if self._catalog is None:
                    self._catalog = ModelCatalog(
                        self.config, OfflineModel(), timezone=self.timezone, inline_max_mb=self.inline_max_mb
                    )
                provider, name = parse_spec(spec, self._catalog.provider)
                self._made[spec] = self._catalog.build(f"{provider}/{name}")
        return self._made[spec]

    def cached(self, spec: str, wrap: ModelWrap) -> Model:
        """The judge ``spec`` names behind ``wrap`` (a trial's response cache), built only when ``wrap`` asks for it
        (a replay does not: no key is needed)."""
        if spec in (OFFLINE, SCRIPTED):
            return self.get(spec)
        provider, name = parse_spec(spec, self.config.main_provider())
        return wrap(f"{provider}/{name}", self.config.generation, lambda: self.get(spec))

    async def aclose(self) -> None:
        for model in self._made.values():
            await model.aclose()
