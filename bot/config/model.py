"""The ``model`` section: the main model, its fallbacks, generation settings and the providers' keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.models.base import Generation

__all__ = ["ModelSection", "ProviderSection"]


class ProviderSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_key: str = ""
    base_url: str | None = None


class ModelSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: Literal["auto", "gemini", "openai", "offline"] = "auto"
    """auto: Gemini when its key is set, else the offline model; openai: any OpenAI-compatible endpoint."""
    name: str = "gemini-2.5-flash"
    api_key: str = ""
    """The main provider's key (else ``providers.<provider>.api_key``)."""
    base_url: str | None = None
    """The main provider's endpoint (else ``providers.<provider>.base_url``)."""
    timeout_s: float = Field(60, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    fallbacks: list[str] = Field(default_factory=list)
    """``provider/name`` models tried in order when the one asked is unavailable (5xx, 429, timeout)."""
    generation: Generation = Field(default_factory=Generation)
    """temperature, max_output_tokens, thinking_budget, thinking_level (an agent's ``generation`` wins)."""
    repair: str = ""
    """``provider/name`` for guardrail repairs ('' = the agent's model)."""
    providers: dict[Literal["gemini", "openai"], ProviderSection] = Field(default_factory=dict)
    """Keys and endpoints of the providers other entries name (``GEMINI_API_KEY``, ``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL`` fill them)."""

    def main_provider(self) -> Literal["gemini", "openai", "offline"]:
        if self.provider != "auto":
            return self.provider
        return "gemini" if self.key_of("gemini") else "offline"

    def key_of(self, provider: str) -> str:
        """The API key for ``provider``: its ``providers`` entry (the environment fills it), else ``api_key``
        when it is the main provider."""
        entry = self.providers.get(provider)  # type: ignore[call-overload]
        if entry is not None and entry.api_key:
            return entry.api_key
        return self.api_key if provider == self._named_provider() else ""

    def url_of(self, provider: str) -> str | None:
        entry = self.providers.get(provider)  # type: ignore[call-overload]
        if entry is not None and entry.base_url:
            return entry.base_url
        return self.base_url if provider == self._named_provider() else None

    def _named_provider(self) -> str:
        return self.provider if self.provider != "auto" else "gemini"

    def keys(self) -> list[str]:
        """Every configured model key (to keep out of logs and traces)."""
        return [k for k in (self.api_key, *(p.api_key for p in self.providers.values())) if k]
