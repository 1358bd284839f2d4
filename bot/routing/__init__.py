"""Routing: which agent answers a message.

``@name text`` targets a known agent; ``@auto --strategy=rule|llm|hybrid text`` routes with a one-off strategy;
any other ``@word`` is plain text. Otherwise the chat's strategy applies: ``rule`` decides offline (by meaning,
triggers and the classifiers, :meth:`Router.by_rules`), ``llm`` asks the model, ``hybrid`` takes the offline
decision when it is at least ``rule.confidence_threshold`` sure and asks the model otherwise (a failed model
call then falls back to the offline guess, if any). Without a decision the configured fallback applies:
``none`` (no answer), ``prompt_user`` (list the agents) or ``default_agent``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import Literal, Protocol

from agents.models.base import Model
from bot.config.settings import RoutingSection
from bot.routing import decision as _decision
from bot.routing import verdicts
from bot.routing.classifier import IntentClassifier
from bot.routing.decision import RouteDecision, Targeting, routing_notice
from bot.routing.llm import LlmRouter, transfer_tool_name
from bot.routing.offline import BUILTIN_SURE, Correction, Meaning, MeaningView, normalised, start_meaning
from bot.routing.request import ask_of, request_of
from bot.routing.rule import RouteTarget, RuleResult, RuleRouter, targets_from

__all__ = [
    "Correction",
    "Meaning",
    "RouteDecision",
    "RouteTarget",
    "Router",
    "parse_target",
    "routing_notice",
    "targets_from",
    "transfer_tool_name",
]


class Models(Protocol):
    """The models by name (:class:`bot.models.ModelCatalog`)."""

    def get(self, name: str | None) -> Model: ...


def parse_target(text: str, known: Collection[str]) -> Targeting:
    """Split ``@name``/``@auto --strategy=…`` off the start of ``text`` (see :func:`decision.parse_target`)."""
    return _decision.parse_target(text, known, STRATEGIES)


class Router:
    """Routes messages among a set of agents; rebuilt when agent files are reloaded.

    ``meaning``: the encoder, corpus and judge (:class:`Meaning`, one per process); without it, or while its
    encoder loads, the offline decision is the triggers' and the classifier's."""

    def __init__(
        self,
        targets: list[RouteTarget],
        llm_model: Model,
        classifier: IntentClassifier | None = None,
        meaning: Meaning | None = None,
    ) -> None:
        self.llm_model = llm_model
        self.classifier = classifier if classifier is not None else IntentClassifier.load()
        self.meaning = meaning
        self.targets: list[RouteTarget] = []
        self.rules = RuleRouter([])
        self.agent_rules = RuleRouter([])
        self.view: MeaningView | None = None
        self._corrections: list[Correction] = []
        self._exact: dict[str, Correction] = {}
        self.set_targets(targets)

    @classmethod
    def configured(cls, targets: list[RouteTarget], models: Models, routing: RoutingSection) -> Router:
        """The gateway's router: ``routing.llm.model`` (the main model when empty) and, per ``routing.rule.meaning``,
        the process's :class:`Meaning` (its encoder starts loading now, on a thread)."""
        return cls(targets, models.get(routing.llm.model or None), meaning=start_meaning(routing.rule))

    def set_targets(self, targets: list[RouteTarget]) -> None:
        self.targets = list(targets)
        self.rules = RuleRouter(self.targets)
        learned = set(self.classifier.labels)
        # The built-ins the classifier tells apart; file agents compete by their triggers and their meaning.
        self.learned = learned <= self.names
        self.agent_rules = (
            RuleRouter([t for t in self.targets if t.name not in learned]) if self.learned else self.rules
        )
        self.view = MeaningView(self.meaning, self.targets, learned) if self.meaning is not None else None
        self.set_corrections(self._corrections)
        self._llm: LlmRouter | None = None  # built on first use, for these targets

    def set_corrections(self, corrections: Sequence[Correction]) -> None:
        """The corrections admins made (stored, shared by every process): examples of their agents from now on
        (the very message, case and spacing aside, goes there at once, with or without the encoder)."""
        self._corrections = [c for c in corrections if c.agent in self.names]
        self._exact = {normalised(c.text): c for c in self._corrections}
        if self.view is not None:
            self.view.set_corrections(self._corrections)
        self._llm = None  # the model is shown them too

    def prepare(self, timeout_s: float | None = None) -> bool:
        """Wait for the encoder and place the agents now (the command line, evaluations and tests; the gateway
        never waits: it routes by triggers and the classifier until both are done). Whether meaning is on."""
        if self.meaning is None or self.view is None or not self.meaning.wait(timeout_s):
            return False
        return self.view.build() is not None

    @property
    def corrections(self) -> list[Correction]:
        return list(self._corrections)

    @property
    def names(self) -> set[str]:
        return {t.name for t in self.targets}

    async def decide(self, text: str, config: RoutingSection, strategy: str) -> RouteDecision:
        """Decide for ``text`` (already stripped of any ``@`` prefix)."""
        started = time.perf_counter()
        if not config.enabled:
            return self._fallback(text, strategy, "routing is disabled", started, method="disabled")
        choose = STRATEGIES.get(strategy)
        if choose is None:
            return self._fallback(text, strategy, f"unknown strategy {strategy!r}", started)
        return await choose(self, text, config, strategy, started)

    async def by_rules(self, text: str, config: RoutingSection, strategy: str, started: float) -> RouteDecision:
        """The offline decision (a file agent, else a built-in), or the fallback."""
        decision, rule = await self.offline(text, config, strategy, started)
        if decision is not None:
            return decision
        return self._fallback(text, strategy, "no rule matched", started, rule=rule)

    async def offline(
        self, text: str, config: RoutingSection, strategy: str, started: float
    ) -> tuple[RouteDecision | None, RuleResult]:
        """The offline decision (None: nothing recognised) and the triggers' scores."""
        rules = self.agent_rules if config.rule.learned and self.learned else self.rules
        rule = rules.route(text) if rules.at_once(text) else await rules.route_async(text)
        if self._exact and (correction := self._exact.get(normalised(text))) is not None:
            state = self.meaning.state if self.meaning is not None else "none"
            return verdicts.corrected(text, strategy, started, correction, 1.0, state), rule
        if not (config.rule.learned and self.learned):  # the built-ins by their trigger keywords
            return (self._from_rule(text, strategy, rule, started) if rule.best else None), rule
        return await self._judge(text, config, strategy, started, rule), rule

    async def _judge(
        self, text: str, config: RoutingSection, strategy: str, started: float, rule: RuleResult
    ) -> RouteDecision | None:
        """The decision by meaning when the encoder is ready, else by triggers and the classifier."""
        request = request_of(text)
        view = self.view if config.rule.meaning else None
        index, *shares = self.classifier.probabilities(ask_of(request))
        asked = verdicts.Asked(text, request, config, strategy, started, rule, shares)
        space = view.space() if view is not None else None
        if view is not None and space is not None and (view.agents or view.corrections or max(shares) < BUILTIN_SURE):
            batch = view.meaning.batch
            assert batch is not None, "a space is placed only once the encoder is loaded"
            vector, evidence = await batch.placed(request, space)
            return verdicts.by_meaning(self, view, asked, vector, evidence)
        state = view.meaning.state if view is not None else ("off" if self.meaning is not None else "none")
        return verdicts.by_triggers(self, asked, index, state)

    async def by_model(
        self, text: str, config: RoutingSection, strategy: str, started: float, guess: RouteDecision | None = None
    ) -> RouteDecision:
        """Ask the model; on no answer, the offline ``guess`` (hybrid) or the fallback."""
        if not self.llm_model.understands:  # the offline stand-in: it would pick at random; say so instead
            decision = await self.by_rules(text, config, strategy, started)
            decision.note = "; ".join(
                n
                for n in ("no model key: the llm strategy needs a model, so the offline decision stands", decision.note)
                if n
            )
            return decision
        timeout_s = config.llm.timeout_ms / 1000
        llm = self._llm
        if llm is None or llm.timeout_s != timeout_s or llm.model is not self.llm_model:
            llm = self._llm = LlmRouter(
                self.llm_model, self.targets, timeout_s=timeout_s, corrections=self._corrections
            )
        chosen = await llm.route(text)
        if chosen.agent is not None:
            factors = {"asked": "the model", **({"offline": guess.factors} if guess is not None else {})}
            return RouteDecision(
                agent=chosen.agent,
                method="llm",
                strategy=strategy,
                confidence=1.0,
                latency_us=(time.perf_counter() - started) * 1e6,
                text=text,
                note=f"the model chose {chosen.agent}" + (f" (offline: {guess.summary()})" if guess else ""),
                model_call=chosen.call,
                factors=factors,
            )
        if strategy == "hybrid" and guess is not None:
            guess.note = "; ".join(n for n in (guess.note, chosen.error or "") if n)
            guess.latency_us = (time.perf_counter() - started) * 1e6
            guess.model_call = chosen.call
            return guess
        fallback = self._fallback(text, strategy, chosen.error or "the model chose no agent", started)
        fallback.model_call = chosen.call
        return fallback

    @staticmethod
    def _from_rule(text: str, strategy: str, rule: RuleResult, started: float) -> RouteDecision:
        assert rule.best is not None
        return RouteDecision(
            agent=rule.best.agent,
            method="rule",
            strategy=strategy,
            confidence=rule.best.confidence / 100,
            matched_keywords=list(rule.best.keywords),
            matched_patterns=list(rule.best.patterns),
            latency_us=(time.perf_counter() - started) * 1e6,
            text=text,
            factors={"trigger_score": rule.best.score, "priority": rule.best.priority},
        )

    def _fallback(
        self,
        text: str,
        strategy: str,
        note: str,
        started: float,
        *,
        rule: RuleResult | None = None,
        method: Literal["fallback", "disabled"] = "fallback",
        factors: dict[str, object] | None = None,
    ) -> RouteDecision:
        best = rule.best if rule is not None else None
        return RouteDecision(
            agent=None,
            method=method,
            strategy=strategy,
            confidence=best.confidence / 100 if best else 0.0,
            matched_keywords=list(best.keywords) if best else [],
            matched_patterns=list(best.patterns) if best else [],
            latency_us=(time.perf_counter() - started) * 1e6,
            text=text,
            note=note,
            factors=dict(factors or {}),
        )

    def apply_fallback(self, decision: RouteDecision, config: RoutingSection) -> RouteDecision:
        """Fill in the agent per ``routing.fallback`` when nothing was chosen."""
        if decision.agent is not None:
            return decision
        mode = "default_agent" if decision.method == "disabled" else config.fallback
        decision.fallback = mode
        if mode == "default_agent":
            decision.agent = config.default_agent if config.default_agent in self.names else None
        return decision

    def agent_list(self) -> str:
        lines = ["I could not tell which agent should answer. Address one directly with @name, e.g.:"]
        for t in self.targets:
            about = f": {t.description}" if t.description else ""
            lines.append(f"@{t.name}{about}")
        return "\n".join(lines)


class Strategy(Protocol):
    """A routing strategy: the decision for ``text`` (already stripped of any ``@`` prefix)."""

    async def __call__(
        self, router: Router, text: str, config: RoutingSection, strategy: str, started: float
    ) -> RouteDecision: ...


async def _rule(router: Router, text: str, config: RoutingSection, strategy: str, started: float) -> RouteDecision:
    return await router.by_rules(text, config, strategy, started)


async def _llm(router: Router, text: str, config: RoutingSection, strategy: str, started: float) -> RouteDecision:
    return await router.by_model(text, config, strategy, started)


async def _hybrid(router: Router, text: str, config: RoutingSection, strategy: str, started: float) -> RouteDecision:
    """The offline decision when it is sure enough, else the model (falling back to the offline guess).
    Without a model that understands text (the offline stand-in), hybrid is rule: it never asks it.

    Sure enough: a confidence of ``rule.confidence_threshold`` (0-1), a trigger at ``rule.strong_priority``
    (without the encoder), or the design's trigger score (keywords and patterns × priority/100) of
    ``confidence_threshold`` × 100: with a model, an agent the operator gave strong triggers is not second-guessed.
    """
    guess, rule = await router.offline(text, config, strategy, started)
    if not router.llm_model.understands:  # by_rules, with the offline result in hand
        return guess or router._fallback(text, strategy, "no rule matched", started, rule=rule)
    threshold = config.rule.confidence_threshold
    if guess is not None and guess.agent is not None:
        design = rule.best.score if rule.best is not None and rule.best.agent == guess.agent else 0.0
        if guess.strong or guess.confidence >= threshold or design >= threshold * 100:
            return guess
    return await router.by_model(text, config, strategy, started, guess if guess and guess.agent else None)


STRATEGIES: dict[str, Strategy] = {"rule": _rule, "llm": _llm, "hybrid": _hybrid}
"""Routing strategies by name (``routing.strategy``, ``/strategy``, ``@auto --strategy=``): a new one is one entry."""
