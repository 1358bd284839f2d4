"""One redaction step for everything stored or shown about a call, and the detector ``remember`` refuses with.

Three things are secrets, each replaced by ``‹redacted: kind›``:

- the configured secret values (model API keys, bot tokens, signing and webhook secrets, MCP environment and
  headers), wherever they appear (kind ``secret``);
- values under names that look like secrets (``password``, ``api_key``, ``Authorization``, ``cookie`` …);
- what the detector recognises in any text: a labelled password, PIN, key, secret or token (``my password is
  hunter2`` keeps ``my password is`` and loses the value; ``password Tr0ub4dor&3`` when the value mixes letters
  and digits), API keys and tokens by their shapes (``sk-…``,
  ``xoxb-…``, ``ghp_…``, ``AIza…``, ``AKIA…``, JWTs, ``Bearer …``, Telegram bot tokens), private keys, and card
  numbers (13–19 digits that pass the Luhn check and start as cards do).

Trace events (:mod:`bot.tracing.recorder`, on the way in and again on the way out), run checkpoints, interrupt
rows, the tool ledger and audit rows (:mod:`bot.store.runs`), the chat history (:mod:`bot.store.messages`), the
web console and ``bot agents replay`` all go through this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from bot.config.settings import Settings

__all__ = ["Redaction", "find_secret", "mark", "redact_json", "redact_text", "redact_value", "secret_in"]


def mark(kind: str) -> str:
    """What a secret of ``kind`` is replaced by."""
    return f"‹redacted: {kind}›"


_VALUE = r"(?P<value>(?!‹)[^\s\"'\\]+)"
"""A labelled value: up to a space, a quote or a backslash, never a mark already (redacting twice changes
nothing)."""


@dataclass(frozen=True)
class _Shape:
    """One kind of secret: a pattern, and the lower-case words one of which a text must hold before the pattern
    is tried (or, with ``digits``, how many digits)."""

    pattern: re.Pattern[str]
    kind: str | None
    """None: named by the label the pattern found (``password``, ``PIN``, ``API key`` …)."""
    triggers: tuple[str, ...] = ()
    digits: int = 0


# Each pattern starts with a character class (the regular-expression engine then skips every other position at
# C speed) and checks that a word starts there with a look-behind; one alternation of them all was ten times
# slower. Every text stored or traced passes through here.
_SHAPES = (
    _Shape(
        re.compile(
            r"(?P<label>[pastPAST](?<!\w[pastPAST])(?:(?<=[pP])(?i:ass(?:word)?|asswd|in|rivate key)"
            r"|(?<=[aA])(?i:pi[ _-]?key)|(?<=[sS])(?i:ecret)|(?<=[tT])(?i:oken)))\b"
            r"[\"']?\s*(?:(?i:is)\b|:|=)\s*[\"']?" + _VALUE
        ),
        None,
        ("pass", "pin", "api", "secret", "token", "private key"),
    ),
    # "with password Tr0ub4dor&3": no "is" or ":", so only a value with both letters and digits counts.
    _Shape(
        re.compile(
            r"(?P<label>[pP](?<!\w[pP])(?i:ass(?:word|wd)?))\s+"
            r"(?P<value>(?!‹)(?=[^\s\"'\\]*[0-9])(?=[^\s\"'\\]*[A-Za-z])[^\s\"'\\]{6,})"
        ),
        "password",
        ("pass",),
    ),
    _Shape(re.compile(r"[sprSPR](?<!\w[sprSPR])[kK]-[A-Za-z0-9_-]{16,}"), "API key", ("k-",)),
    _Shape(re.compile(r"A(?<!\wA)(?:Iza[0-9A-Za-z_-]{30,}|KIA[0-9A-Z]{16}\b)"), "API key", ("aiza", "akia")),
    _Shape(re.compile(r"x(?<!\wx)ox[abprs]-[A-Za-z0-9-]{10,}"), "token", ("xox",)),
    _Shape(re.compile(r"g(?<!\wg)h[pousr]_[A-Za-z0-9]{20,}"), "token", ("gh",)),
    _Shape(re.compile(r"e(?<!\we)yJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "token", ("eyj",)),
    _Shape(re.compile(r"[bB](?<!\w[bB])(?i:earer)\s+(?!‹)[A-Za-z0-9._~+/-]{16,}=*"), "token", ("bearer",)),
    _Shape(
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nr])*(?:-----END [A-Z ]*PRIVATE KEY-----)?"
        ),
        "private key",
        ("-----begin",),
    ),
    _Shape(re.compile(r"[0-9](?<!\w[0-9])[0-9]{5,}:[A-Za-z0-9_-]{30,}\b"), "token", digits=6),  # a bot token
    _Shape(re.compile(r"[0-9](?<!\w[0-9])(?:[ -]?[0-9]){12,18}\b"), "card number", digits=13),
)
"""Passwords, PINs, API keys, tokens, private keys and card numbers."""
_DIGITS = "0123456789"
_RUN = re.compile("[0-9]{4}")
_KIND_OF_LABEL = {"pass": "password", "passwd": "password", "pin": "PIN", "private key": "private key"}


def _card(digits: str) -> bool:
    """A payment card number: 13–19 digits starting as cards do (2–6) that pass the Luhn check (so phone
    numbers, timestamps and chat ids are left alone)."""
    digits = digits.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _label_kind(label: str) -> str:
    word = " ".join(label.lower().replace("_", " ").replace("-", " ").split())
    if word.startswith("api"):
        return "API key"
    return _KIND_OF_LABEL.get(word, word)


_TRIGGERS = tuple(t for shape in _SHAPES for t in shape.triggers)


def _found(text: str) -> list[tuple[int, int, str]]:
    """What the detector finds in ``text``: (start, end, replacement), in order, none overlapping."""
    if len(text) < 5:  # "pin:1" is the shortest secret it knows
        return []
    low = text.lower()
    digits = sum(map(text.count, _DIGITS))  # ten C-level counts: a translate is ~5 µs on non-ASCII text
    if digits >= 6 and _RUN.search(text) is None:
        digits = 0  # no four digits in a row: neither a card number nor a bot token
    if digits < 6:
        for t in _TRIGGERS:
            if t in low:
                break
        else:
            return []  # most text: one lower-casing, one translation and a few substring searches
    found: list[tuple[int, int, str]] = []
    for shape in _SHAPES:
        if shape.digits:
            if digits < shape.digits:
                continue
        elif not any(t in low for t in shape.triggers):
            continue
        for match in shape.pattern.finditer(text):
            if shape.kind is None or "value" in match.re.groupindex:
                kind = shape.kind or _label_kind(match["label"])
                found.append((match.start("value"), match.end("value"), mark(kind)))
            elif shape.kind != "card number" or _card(match[0]):
                found.append((match.start(), match.end(), mark(shape.kind)))
    if len(found) > 1:
        found.sort(key=lambda f: (f[0], f[0] - f[1]))
        kept = [found[0]]
        for item in found[1:]:
            if item[0] >= kept[-1][1]:
                kept.append(item)
        found = kept
    return found


def find_secret(text: str) -> str | None:
    """The kind of the first secret the detector finds in ``text`` (None: nothing that looks like one)."""
    found = _found(text)
    return found[0][2][len("‹redacted: ") : -1] if found else None


def secret_in(text: str) -> bool:
    """Whether ``text`` looks like it holds a credential (what ``remember`` refuses)."""
    return bool(_found(text))


def redact_text(text: str) -> str:
    """``text`` with what the detector recognises replaced by ``‹redacted: kind›``."""
    found = _found(text)
    if not found:
        return text
    out, at = [], 0
    for start, end, replacement in found:
        out += [text[at:start], replacement]
        at = end
    out.append(text[at:])
    return "".join(out)


SECRET_KEY = re.compile(
    r"(?:^|[_-])(?P<word>pass(?:word)?|passwd|secret|token|api[_-]?key|authori[sz]ation|cookie|credentials?"
    r"|private[_-]?key)(?:$|[_-])",
    re.IGNORECASE,
)
"""Argument and header names whose values are secrets."""
_NAME_TRIGGERS = ("pass", "secret", "token", "api", "authori", "cookie", "credential", "private")


def _named_secret(text: str) -> bool:
    low = text.lower()
    for trigger in _NAME_TRIGGERS:  # noqa: SIM110 - a loop, not any() over a generator: twice a message
        if trigger in low:
            return True
    return False


_SECRET_NAME_IN_JSON = re.compile(
    r'"(?:[^"\\]*[_-])?(?:pass(?:word)?|passwd|secret|token|api[_-]?key|authori[sz]ation|cookie|credentials?'
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

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """The configured secrets: model keys, channel tokens and secrets, MCP servers' environment and headers."""
        values = [*settings.model.keys()]
        for name in type(settings.channels).model_fields:
            section = getattr(settings.channels, name)
            for key in ("token", "bot_token", "app_token", "signing_secret"):
                values.append(str(getattr(section, key, "") or ""))
            webhook = getattr(section, "webhook", None)
            values.append(str(getattr(webhook, "secret_token", "") or ""))
        for server in settings.mcp.servers.values():
            values += [str(v) for v in server.env.values()] + [str(v) for v in server.headers.values()]
        return cls(values)

    def key_kind(self, key: str) -> str | None:
        """The kind of secret a value under ``key`` is (None: an ordinary name)."""
        if key in self._keys:
            return self._keys[key]
        found = SECRET_KEY.search(key)
        kind = _label_kind(found["word"]) if found else None
        if kind in ("authorisation", "credential"):
            kind = {"authorisation": "authorization", "credential": "credentials"}[kind]
        if len(self._keys) > 10_000:  # keys come from tool arguments too: stay bounded
            self._keys.clear()
        self._keys[key] = kind
        return kind

    def text(self, value: str) -> str:
        short = len(value) <= SHORT
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
        :meth:`text` keep).  A trace event's fields went from 2.3 to 0.7 µs (a route event: three strings, two
        numbers, two None)."""
        kinds, known = self._keys, self._short
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


def redact_json(text: str) -> str:
    """JSON ``text`` with its secrets redacted, as :func:`redact_value` does; read and written again only when
    something in it looks like a secret (most rows: one regular-expression search)."""
    if not (_found(text) or (_named_secret(text) and _SECRET_NAME_IN_JSON.search(text))):
        return text
    redacted = _PLAIN.value(json.loads(text))
    return _to_json(redacted)
