"""The models the gateway uses: the main one, an agent's own (``model: provider/name`` in its file, with its
``generation``), the router's and the repairer's, each followed by ``model.fallbacks``.

``provider/name`` names a model (``gemini/gemini-2.5-flash-lite``, ``openai/gpt-4o-mini``,
``openai/meta-llama/llama-3.1-8b-instruct`` on OpenRouter); a bare name means the main provider.  A model
is built once per name and generation, when first asked for; one whose provider has no key configured is
reported and the main model answers instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from agents.models.base import Generation, Model
from agents.models.fallback import FallbackModel
from agents.models.offline import OfflineModel
from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.model import ModelSection
from bot.errors import ConfigError
from bot.ops.metered import ObservedModel
from bot.ops.metrics import Metrics

log = logging.getLogger(__name__)

PROVIDERS = ("gemini", "openai", "offline")

ModelWrap = Callable[[str, Generation, Callable[[], Model]], Model]
"""Stands between the catalog and a model it builds: given the model's label (``provider/name``), its generation
and how to build it, the model to use (an evaluation's response cache answers recorded calls without it)."""


def parse_spec(spec: str, default_provider: str) -> tuple[str, str]:
    """``provider/name`` → (provider, name); a name without a known provider is the default provider's."""
    head, sep, rest = spec.strip().partition("/")
    if sep and head in PROVIDERS:
        return head, rest
    return default_provider, spec.strip()


class ModelCatalog:
    def __init__(
        self,
        model: ModelSection,
        main: Model | None = None,
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
        wrap: ModelWrap | None = None,
        *,
        timezone: str,
        inline_max_mb: float,
    ) -> None:
        """``model``: the ``model`` section; ``metrics``: every model built here (and ``main``) is measured there;
        ``clock``: the models' (the offline model reads "remind me tomorrow at 9" on it, in ``timezone``,
        ``jobs.timezone``; the others wait their retries on it); ``wrap``: around every model built here (not
        ``main``), fallbacks included; ``inline_max_mb``: ``media.inline_max_mb`` (Gemini's inline files)."""
        self.config = model
        self.timezone = timezone
        self.inline_max_bytes = int(inline_max_mb * 1024 * 1024)
        self.wrap = wrap
        self.clock = clock
        self.metrics = metrics
        cfg = model
        self.provider = cfg.main_provider()
        self._built: dict[tuple[str, str, Generation], Model] = {}
        self._chains: dict[tuple[str, str, Generation], Model] = {}
        self._warned: set[str] = set()
        self.injected = main is not None
        base = (
            self._observed(main, "injected")
            if main is not None
            else self._single(self.provider, cfg.name, cfg.generation)
        )
        self.main = self._chained(base, (self.provider, cfg.name), cfg.generation)

    def get(self, spec: str | None, generation: Generation | None = None) -> Model:
        """The model ``spec`` names (None or '': the main model) with ``generation``, and its fallbacks."""
        cfg = self.config
        if not spec and (generation is None or self.injected):
            return self.main
        provider, name = parse_spec(spec, self.provider) if spec else (self.provider, cfg.name)
        wanted = generation or cfg.generation
        key = (provider, name, wanted)
        if key not in self._chains:
            try:
                model = self._single(provider, name, wanted)
            except ConfigError as exc:
                if spec not in self._warned:
                    self._warned.add(spec or "")
                    log.warning("model %s cannot be used (%s); the main model answers instead", spec, exc)
                return self.main
            self._chains[key] = self._chained(model, (provider, name), wanted)
        return self._chains[key]

    def build(self, spec: str, generation: Generation | None = None) -> Model:
        """The model ``spec`` names alone (no fallbacks); raises :class:`ConfigError` when it cannot be built."""
        provider, name = parse_spec(spec, self.provider) if spec else (self.provider, self.config.name)
        return self._build(provider, name, generation or self.config.generation)

    def embedder(self, spec: str) -> Model | None:
        """The embedding model ``spec`` names (no fallbacks: vectors of different models do not compare);
        None, with a warning, when it cannot be built."""
        provider, name = parse_spec(spec, self.provider)
        try:
            model = self._single(provider, name, Generation())
        except ConfigError as exc:
            log.warning("memory.embeddings.model %s cannot be used (%s): full-text recall only", spec, exc)
            return None
        if not model.understands:
            return None
        return model

    def summariser(self, spec: str) -> Model | None:
        """The model for conversation summaries (``memory.summary.model``); None: extractive (no model, or
        the offline stand-in)."""
        if spec == "extractive":
            return None
        model = self.get(spec or None)
        return model if model.understands else None

    async def aclose(self) -> None:
        for model in self._built.values():
            await model.aclose()
        if self.injected:
            await self.main.aclose()

    # -- building

    def _chained(self, model: Model, named: tuple[str, str], generation: Generation) -> Model:
        chain = [model]
        for spec in self.config.fallbacks:
            provider, name = parse_spec(spec, self.provider)
            if (provider, name) == named:
                continue
            try:
                chain.append(self._single(provider, name, generation))
            except ConfigError as exc:
                raise ConfigError(f"model.fallbacks: {spec}: {exc}") from None
        return FallbackModel(chain) if len(chain) > 1 else model

    def _single(self, provider: str, name: str, generation: Generation) -> Model:
        key = (provider, name, generation)
        if key not in self._built:
            if self.wrap is None:
                model = self._build(provider, name, generation)
            else:
                model = self.wrap(f"{provider}/{name}", generation, lambda: self._build(provider, name, generation))
            self._built[key] = self._observed(model, provider)
        return self._built[key]

    def _observed(self, model: Model, provider: str) -> Model:
        return ObservedModel(model, self.metrics, provider) if self.metrics is not None else model

    def _build(self, provider: str, name: str, generation: Generation) -> Model:
        cfg = self.config
        if provider == "offline":
            return OfflineModel(now=self.clock.now, timezone=self.timezone)
        api_key, base_url = cfg.key_of(provider), cfg.url_of(provider)
        if provider == "gemini":
            if not api_key:
                raise ConfigError("Gemini needs a key: set GEMINI_API_KEY (or model.providers.gemini.api_key)")
            from agents.models.gemini import GeminiModel

            return GeminiModel(
                model=name,
                api_key=api_key,
                base_url=base_url,
                timeout_s=cfg.timeout_s,
                max_retries=cfg.max_retries,
                inline_max_bytes=self.inline_max_bytes,
                generation=generation,
                clock=self.clock,
            )
        if provider == "openai":
            if not api_key and not base_url:
                raise ConfigError(
                    "an OpenAI-compatible model needs OPENAI_API_KEY (OpenAI) or a base_url (a local endpoint: "
                    "model.base_url or OPENAI_BASE_URL)"
                )
            from agents.models.openai_compat import OpenAIModel

            return OpenAIModel(
                name,
                api_key,
                base_url=base_url,
                timeout_s=cfg.timeout_s,
                max_retries=cfg.max_retries,
                generation=generation,
                clock=self.clock,
            )
        raise ConfigError(f"unknown model provider {provider!r}: one of {', '.join(PROVIDERS)}")
