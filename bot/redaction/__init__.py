"""One redaction step for everything stored or shown about a call, and the detector ``remember`` refuses with.

Three things are secrets, each replaced by ``‹redacted: kind›``:

- the configured secret values (model API keys, bot tokens, signing and webhook secrets, MCP environment and
  headers), wherever they appear (kind ``secret``);
- values under names that look like secrets (``password``, ``passphrase``, ``api_key``, ``Authorization``,
  ``cookie`` …);
- what the detector (:mod:`bot.redaction.detector`) finds in any text: labelled values in English, German,
  French, Spanish, Portuguese, Chinese, Japanese, Korean and Russian (``my password is hunter2`` keeps ``my
  password is`` and loses the value; ``password: correct horse battery staple`` loses the phrase; ``DB_PASSWORD=…``,
  ``?access_token=…``, ``密码：…``), credentials in URLs and commands (``postgresql://bot:pw@db``, ``curl -u``,
  ``mysql -p``), seed phrases and recovery codes, keys and tokens by their shapes, private keys, card numbers,
  and answers given to questions that asked for a secret (:func:`keep_out`).

Trace events (:mod:`bot.tracing.recorder`, on the way in and again on the way out), run checkpoints, interrupt
rows, the tool ledger and audit rows (:mod:`bot.store.sql.repos.runs`), the chat history
(:mod:`bot.store.sql.messages`), scheduled messages (:mod:`bot.runs.scheduled`), jobs (:mod:`bot.jobs.service`),
the web console and ``bot agents replay`` all go through this package.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Self

from bot.redaction import detector
from bot.redaction.detector import asks_for_secret, find_secret, found, keep_out, mark, redact_text, secret_in
from bot.redaction.words import label_kind

if TYPE_CHECKING:
    from agents.tools.mcp.config import McpConfig
    from bot.config.model import ModelSection
    from bot.config.settings import ChannelsSection

__all__ = [
    "Redaction",
    "asks_for_secret",
    "find_secret",
    "keep_out",
    "mark",
    "redact_json",
    "redact_text",
    "redact_value",
    "secret_in",
]


SECRET_KEY = re.compile(
    r"(?:^|[_-])(?P<word>pass(?:word|phrase|code)?|passwd|secret|token|api[_-]?key|authori[sz]ation|cookie|credentials?"
    r"|private[_-]?key)(?:$|[_-])",
    re.IGNORECASE,
)
"""Argument and header names whose values are secrets."""
_NAMES = {"privatekey": "private key", "authorisation": "authorization", "credential": "credentials"}


def _name_kind(word: str) -> str:
    word = re.sub("[ _-]", "", word.lower())
    return _NAMES.get(word) or label_kind(word)


_NAME_TRIGGERS = ("pass", "secret", "token", "api", "authori", "cookie", "credential", "private")


def _named_secret(text: str) -> bool:
    low = text.lower()
    for trigger in _NAME_TRIGGERS:  # noqa: SIM110 - a loop, not any() over a generator: twice a message
        if trigger in low:
            return True
    return False


_SECRET_NAME_IN_JSON = re.compile(
    r'"(?:[^"\\]*[_-])?(?:pass(?:word|phrase|code)?|passwd|secret|token|api[_-]?key|authori[sz]ation|cookie|credentials?'
    r'|private[_-]?key)(?:[_-][^"\\]*)?"\s*:',
    re.IGNORECASE,
)


OPAQUE = frozenset({"provider_meta"})
"""Keys whose values are a provider's opaque data (Gemini's thought signatures), handed back as they were."""


SHORT = 80
"""Strings up to this long are remembered with their redacted form (bounded)."""


_UNSEEN = object()


class Redaction:
    """The redaction step: configured secret values, secret-looking names, and the detector."""

    limit = 0
    """Texts longer than this (after redaction) are cut short, with an ellipsis (0: never)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Short values would redact ordinary words; real keys and tokens are long.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)
        self._keys: dict[str, str | None] = {}
        self._short: dict[str, str] = {}
        self._generation = detector.generation

    @classmethod
    def configured(cls, model: ModelSection, channels: ChannelsSection, mcp: McpConfig) -> Self:
        """The configured secrets: model keys, channel tokens and secrets, MCP servers' environment and headers
        (the ``model``, ``channels`` and ``mcp`` sections)."""
        values = [*model.keys()]
        for name in type(channels).model_fields:
            section = getattr(channels, name)
            for key in ("token", "bot_token", "app_token", "signing_secret"):
                values.append(str(getattr(section, key, "") or ""))
            webhook = getattr(section, "webhook", None)
            values.append(str(getattr(webhook, "secret_token", "") or ""))
        for server in mcp.servers.values():
            values += [str(v) for v in server.env.values()] + [str(v) for v in server.headers.values()]
        return cls(values)

    def key_kind(self, key: str) -> str | None:
        """The kind of secret a value under ``key`` is (None: an ordinary name)."""
        if key in self._keys:
            return self._keys[key]
        named = SECRET_KEY.search(key)
        kind = _name_kind(named["word"]) if named else None
        if len(self._keys) > 10_000:  # keys come from tool arguments too: stay bounded
            self._keys.clear()
        self._keys[key] = kind
        return kind

    def _fresh(self) -> dict[str, str]:
        """The cache of short texts already redacted, emptied when an answer was kept out since (it may hold
        that answer as it was)."""
        if self._generation != detector.generation:
            self._generation = detector.generation
            self._short.clear()
        return self._short

    def text(self, value: str) -> str:
        short = len(value) <= SHORT
        self._fresh()
        if short and (known := self._short.get(value)) is not None:
            return known  # names, statuses, models: the same few short strings again and again
        shown = value
        for secret in self.secrets:
            if secret in shown:
                shown = shown.replace(secret, mark("secret"))
        shown = redact_text(shown)
        if self.limit and len(shown) > self.limit:
            shown = shown[: self.limit] + "…"
        if short:
            if len(self._short) > 10_000:
                self._short.clear()
            self._short[value] = shown
        return shown

    def value(self, value: Any, key: str = "") -> Any:
        """``value`` (JSON-like: dicts, lists, strings, numbers) with every secret in it replaced."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if key and value not in ("", [], {}) and (kind := self.key_kind(key)) is not None:
            return value if isinstance(value, str) and value.startswith("‹redacted") else mark(kind)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {str(k): v if k in OPAQUE else self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return self.text(str(value))

    def fields(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """``fields`` without its None values, each redacted as :meth:`value` redacts it under its name.

        The same result as :meth:`value` for each, with two fast paths that cannot let a secret through:
        numbers and booleans (a bare ``type()`` check), and a short string under a name already known to be
        ordinary that the step has redacted before (its redacted form, from the caches :meth:`key_kind` and
        :meth:`text` keep); see bench/README.md, "Per-message micro-optimisations"."""
        kinds, known = self._keys, self._fresh()
        out: dict[str, Any] = {}
        for key, value in fields.items():
            cls = type(value)
            if cls is str:
                if kinds.get(key, _UNSEEN) is None and (shown := known.get(value)) is not None:
                    out[key] = shown
                    continue
            elif cls in _NUMBERS:
                out[key] = value
                continue
            elif value is None:
                continue
            out[key] = self.value(value, key)
        return out


_NUMBERS = frozenset({int, float, bool})
"""Values that cannot hold a secret (exactly these types; a subclass takes the way of :meth:`Redaction.value`)."""

_PLAIN = Redaction()


def redact_value(value: Any) -> Any:
    """``value`` with secret-looking names and detected secrets redacted (the store itself replaces the configured
    secret values in every row it writes)."""
    return _PLAIN.value(value)


_to_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _unescaped(text: str) -> str:
    """JSON ``text`` roughly as its strings read (line breaks, tabs and quotes unescaped): what the detector is
    shown when the text as it is holds nothing (a secret on the line after its label)."""
    return text.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"')


def redact_json(text: str) -> str:
    """JSON ``text`` with its secrets redacted, as :func:`redact_value` does; read and written again only when
    something in it looks like a secret (most rows: one regular-expression search)."""
    if not (
        found(text)
        or (_named_secret(text) and _SECRET_NAME_IN_JSON.search(text))
        # "Password:\\nhunter2" in JSON: the value is on the next line
        or ("\\" in text and detector.may_hold(text) and found(_unescaped(text)))
    ):
        return text
    redacted = _PLAIN.value(json.loads(text))
    return _to_json(redacted)
