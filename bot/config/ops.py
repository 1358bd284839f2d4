"""The operations sections: ``http`` (the shared server), ``metrics`` (Prometheus at ``/metrics``) and
``budgets`` (token and cost limits per user and per chat, per day and per month)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.config.checks import iana_zone


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpSection(_Section):
    """The shared HTTP server: ``/healthz``, ``/readyz``, ``/metrics`` and the channels' webhooks."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


class MetricsSection(_Section):
    """Prometheus metrics on the shared HTTP server (``http.enabled``)."""

    enabled: bool = True
    path: str = "/metrics"
    token: str = ""
    """When set, a scrape must send ``Authorization: Bearer <token>`` (set it from the environment:
    ``BOT_METRICS__TOKEN``); '' = open, like ``/healthz`` (bind ``http.host`` to a private address)."""

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or value in ("/healthz", "/readyz"):
            raise ValueError("a path of its own starting with '/', e.g. /metrics")
        return value


class Limits(_Section):
    """Limits of one scope (a person, or a chat); 0 = no limit."""

    daily_tokens: int = Field(0, ge=0)
    monthly_tokens: int = Field(0, ge=0)
    daily_cost: float = Field(0, ge=0)
    """In the price table's currency (``budgets.currency``)."""
    monthly_cost: float = Field(0, ge=0)

    def any(self) -> bool:
        return bool(self.daily_tokens or self.monthly_tokens or self.daily_cost or self.monthly_cost)


class Price(_Section):
    """What a model costs per million tokens. Thinking is billed as output (it is counted in it)."""

    input: float = Field(0, ge=0)
    output: float = Field(0, ge=0)
    cached: float | None = Field(None, ge=0)
    """Input served from the provider's cache; None = the input price."""


class BudgetsSection(_Section):
    """Token and cost budgets, checked before each model call of a run."""

    enabled: bool = True
    """Count usage (``/usage``) and apply the limits that are set; off: neither (no ``/usage``)."""
    timezone: str = "UTC"
    """Where days and months start: limits reset at midnight there, and on the first of the month."""
    user: Limits = Field(default_factory=Limits)
    chat: Limits = Field(default_factory=Limits)
    admins_exempt: bool = False
    """Admins (``channels.<name>.admins``, the console's user) are not limited."""
    currency: str = "USD"
    prices: dict[str, Price] = Field(default_factory=dict)
    """By model name (``gemini-2.5-flash``) or ``provider/name``; a model without a price costs 0 (its tokens
    still count)."""
    retention_days: int = Field(400, ge=1)
    """Usage rows older than this are deleted (a month's total needs 31 days)."""

    _zone = field_validator("timezone")(iana_zone)

    def limited(self) -> bool:
        return self.enabled and (self.user.any() or self.chat.any())

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (as the response names it, bare or ``provider/name``): by that name, by its bare
        name, or by the one ``provider/name`` key whose name it is (responses name the model bare, so a price
        keyed ``openai/model-b`` counts for ``model-b``; two providers' prices for one name that differ: none)."""
        bare = model.rpartition("/")[2]
        found = self.prices.get(model) or self.prices.get(bare)
        if found is not None:
            return found
        keyed: list[Price] = []
        for key, price in self.prices.items():
            if key.rpartition("/")[2] == bare and price not in keyed:
                keyed.append(price)
        return keyed[0] if len(keyed) == 1 else None
