"""The ``routing`` section: how a message finds its agent (rules, the model, or both) and what happens when
nothing matches."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _share(value: Any) -> Any:
    # A confidence is a share, 0-1; a percentage (80, as configurations before wave 4 wrote it) is read as one.
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 1:
        return value / 100
    return value


Share = Annotated[float, BeforeValidator(_share), Field(ge=0, le=1)]


class RuleRouting(_Section):
    confidence_threshold: Share = 0.8
    """hybrid: an offline decision at least this sure (0-1) stands; below it, the model is asked."""
    meaning: bool = True
    """Route by meaning too (a local sentence encoder, loaded on a thread at start: the agents' descriptions,
    examples and corrections, in any language); false: triggers and the classifier only."""
    encoder: str = "use"
    """The sentence encoder: ``use`` (the multilingual Universal Sentence Encoder shipped in a wheel)."""
    agent_min_score: float = Field(20, ge=0)
    """Without the encoder: what a file agent's triggers must score (a pattern 20, a keyword 10, whatever the
    priority) to beat the built-ins."""
    agent_margin: float = Field(10, ge=0)
    """...and this much more than the next file agent's."""
    learned: bool = True
    """chat / react / plan chosen by the shipped classifier (false: by their trigger keywords)."""
    min_confidence: Share = 0.65
    """Below this share the classifiers have not recognised the message (gibberish scores about 0.6): the rules
    decide nothing, and ``routing.fallback`` (or, in hybrid, the model) takes over."""
    strong_priority: int = Field(80, ge=0, le=100)  # without the encoder: a file agent at this priority wins on one
    classifier_sure: Share = 0.99  # match unless the classifier is this sure (0-1); 0 turns it off


class LlmRouting(_Section):
    model: str = ""
    """Model name for the router ('' = the main model)."""
    timeout_ms: int = Field(5000, ge=1)


class RoutingSection(_Section):
    enabled: bool = True
    strategy: Literal["rule", "llm", "hybrid"] = "hybrid"
    rule: RuleRouting = Field(default_factory=RuleRouting)
    llm: LlmRouting = Field(default_factory=LlmRouting)
    fallback: Literal["none", "prompt_user", "default_agent"] = "default_agent"
    default_agent: str = "chat"
    notify: bool | Literal["agents"] = "agents"
    """A "🤖 Auto-routing to: X (matched: bug)" line: ``agents`` (to a file agent), ``true`` (always), ``false``."""
