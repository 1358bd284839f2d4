"""The detector: what in a text is a secret, for the redaction step (:mod:`bot.redaction`) and ``remember``.

Each finding is a span and a kind; the step puts ``‹redacted: kind›`` in its place. It finds:

- **Labelled values.** A label — password, passwd, passphrase, passcode, pass, pwd, pw, PIN (PIN code), secret,
  token, API key and a key with a qualifier (access, secret, private, signing, Wi-Fi … key), credentials, CVV/CVC;
  German Passwort, Kennwort, Geheimzahl, WLAN-Schlüssel; French mot de passe, mdp, clé API; Spanish contraseña;
  Portuguese senha; Chinese 密码, 口令, 密钥, 私钥, 令牌; Japanese パスワード, 暗証番号; Korean 비밀번호; Russian
  пароль — alone or ending a name (``DB_PASSWORD``, ``AWS_SECRET_ACCESS_KEY``, ``accessToken``, ``x-api-key``,
  ``PGPASSWORD``, a URL's ``?access_token=``), then ``=`` (``=>``, ``:=``), ``:`` or ``：`` (``Password:`` with the
  value on the next line too) or a copula (is, are, was, 's, changed to, and to after set, change or reset; ist,
  lautet; est; es; é; 是, 为; は; 는, 은), with at most a short "for the wifi" in between. After ``=`` the value is
  one word (in a URL, up to ``&``); after ``:`` or a copula it is the phrase: at most 8 words of that line, ending
  after a word that ends a clause (``, ; . ! ?``) and before a joining word (and, but, please, for …) or another
  ``name:`` (so ``password: correct horse battery staple`` loses all four words, and ``my password is hunter2 and
  my PIN is 1234`` two values, not the sentence); a quoted value runs to its closing quote, and
  ``<password>…</password>`` to its tag. Without any of these, ``password Tr0ub4dor&3`` counts when the value
  mixes letters and digits, ``PIN 4821`` and ``密码 123456`` when it has digits, and ``--password x`` always.
- **Credentials in URLs, headers and commands**: ``scheme://user:password@host`` and ``user:password@host``,
  ``Authorization: Basic …``, ``curl -u user:password``, ``mysql -pSECRET``, ``mysql -p SECRET``, ``sshpass -p``.
- **Seed phrases** (12–30 lowercase words after "seed phrase", "recovery phrase", "mnemonic", 助记词 …) and
  **recovery or backup codes** (the codes, each with a digit, after "recovery codes:", "backup codes are" …).
- **Keys and tokens by their shapes**: ``sk-…`` and ``sk_live_…``, ``AIza…``, ``AKIA…``/``ASIA…``, ``xox?-…``,
  ``xapp-…``, ``gh?_…``, ``github_pat_…``, ``glpat-…``, ``hf_…``, ``npm_…``, ``pypi-…``, JWTs, ``Bearer …``,
  Telegram bot tokens, Slack and Discord webhook URLs (their secret part), private key blocks; and card numbers
  (13–19 digits that pass the Luhn check and start as cards do, so chat ids and timestamps are left alone).
- **Answers given as secrets** (:func:`keep_out`): the answer to a question that asked for one, wherever this
  process meets it again.

Left alone, so that ordinary chat and code stay as written: a label with no value ("the password policy is
strict", "I changed my password"); a copula before an ordinary word ("the password is on the card", "the token is
stored in …", "密码是多少"); after a label that heads ordinary sentences too (token, secret, pass, PIN, key), a
value that does not look made up ("Token: the rate limiter …"); ``pw``, ``pwd`` and ``signature`` with a copula
("pw is short for password"); a bare ``key`` (but a URL's ``?key=``); ``sort_key``, ``max_tokens``,
``token_count``, ``password_file``, ``--min-pass``; placeholders, references and examples (``${TOKEN}``,
``$API_KEY``, ``{password}``, ``<your-token>``, ``***``, ``123456:ABC…``, ``os.environ[…]``, ``get_token()``,
``self.token``, ``?``); type annotations (``token: str``); ``true``, ``false``, ``none``, ``null``; code that passes
a name on (``token = access_token``, ``password=password``, ``connect(password=pw)``); URLs without credentials
(and ``user:password@host`` itself, a template), ``user@host``, ``mailto:`` and ``cc:`` addresses, ``@channel``.
``tests/bot/test_redaction.py`` holds the table of both.

Every stored or traced text comes through here, so most cost almost nothing: one lower-casing, one search of a
prefix-tree pattern of every trigger word, one search for four digits in a row (most chat messages stop there:
see bench/README.md, "Per-message micro-optimisations").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.redaction.checks import (
    CURL,
    INTL,
    LABEL,
    MYSQL,
    RECOVERY_CODES,
    SEED,
    URL_CREDENTIALS,
    WORD_START,
    Found,
    bare,
    intl,
    labelled,
    mark,
    url_credentials,
)
from bot.redaction.words import label_kind

__all__ = ["asks_for_secret", "find_secret", "found", "keep_out", "mark", "may_hold", "redact_text", "secret_in"]


# -- shapes -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    """One kind of secret: a pattern, the trigger words one of which a text must hold before it is tried (or
    ``digits``: four digits in a row), and how a match becomes a finding."""

    pattern: re.Pattern[str]
    kind: str | None
    """None: ``check`` says (a labelled value is named by its label)."""
    triggers: tuple[str, ...] = ()
    digits: bool = False
    check: Callable[[re.Match[str], str], Found | None] | None = None
    anchored: bool = False
    """The pattern is tried only where one of the triggers starts (each is how a match begins): far faster than
    a search over a long text for a pattern that starts with a common letter."""


def _value(kind: str) -> Callable[[re.Match[str], str], Found | None]:
    def check(match: re.Match[str], _text: str) -> Found | None:
        return match.start("value"), match.end("value"), mark(kind)

    return check


def _card(match: re.Match[str], _text: str) -> Found | None:
    """A payment card number: 13–19 digits starting as cards do (2–6) that pass the Luhn check (so phone
    numbers, timestamps and chat ids are left alone)."""
    digits = match[0].replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return None
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return (match.start(), match.end(), mark("card number")) if total % 10 == 0 else None


_INTL_TRIGGERS = ("密码", "口令", "密钥", "私钥", "令牌", "パスワード", "暗証番号", "비밀번호", "пароль")
_LABEL_TRIGGERS = (
    "pass", "pgpass", "pw", "pin", "secret", "token", "key", "apikey", "credential", "cvc", "cvv", "sig=",
    "signature=", "kennwort", "geheimzahl", "schlüssel", "schlussel", "mdp", "contrase", "senha", "clé",
    "mot de passe",
)  # fmt: skip
_SHAPES = (
    _Shape(LABEL, None, _LABEL_TRIGGERS, check=labelled, anchored=True),
    _Shape(INTL, None, _INTL_TRIGGERS, check=intl),
    _Shape(
        re.compile(
            r"(?P<label>[pPkKmMsScC]" + WORD_START + r"(?i:(?<=p)(?:ass(?:word|wd|phrase|code|wort)?|wd)"
            r"|(?<=k)ennwort|(?<=m)(?:dp|ot de passe)|(?<=s)enha|(?<=c)ontrase[ñn]a))[ \t]+"
            r"(?P<value>(?!‹)(?=[^\s\"'\\]*[0-9])(?=[^\s\"'\\]*[A-Za-z])[^\s\"'\\]{6,})"
        ),
        None,
        ("pass", "pwd", "kennwort", "mdp", "senha", "contrase", "mot de passe"),
        check=bare,
        anchored=True,
    ),
    _Shape(URL_CREDENTIALS, None, ("@",), check=url_credentials),
    _Shape(CURL, "password", ("-u",), check=_value("password")),
    _Shape(MYSQL, "password", ("mysql", "mariadb", "sshpass"), check=_value("password")),
    _Shape(
        SEED,
        "seed phrase",
        ("seed", "recovery", "backup", "mnemonic", "wallet", "wiederherstellung", "phrase de", "助记词"),
        check=_value("seed phrase"),
        anchored=True,
    ),
    _Shape(
        RECOVERY_CODES,
        "recovery code",
        ("recovery", "backup", "2fa", "wiederherstellung", "code de", "codes de", "恢复码", "备用码"),
        check=_value("recovery code"),
        anchored=True,
    ),
    _Shape(
        re.compile(r"[sprSPR](?<!\w[sprSPR])[kK](?:-|_live_|_test_)[A-Za-z0-9_-]{16,}"),
        "API key",
        ("sk-", "pk-", "rk-", "sk_live_", "rk_live_", "sk_test_", "rk_test_"),
    ),
    _Shape(re.compile(r"A(?<!\wA)(?:Iza[0-9A-Za-z_-]{30,}|[KS]IA[0-9A-Z]{16}\b)"), "API key", ("aiza", "akia", "asia")),
    _Shape(re.compile(r"x(?<!\wx)(?:ox[abprs]|app)-[A-Za-z0-9-]{10,}"), "token", ("xox", "xapp-")),
    _Shape(
        re.compile(r"g(?<!\wg)(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{22,}|lpat-[A-Za-z0-9_-]{20,})"),
        "token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-"),
    ),
    _Shape(re.compile(r"h(?<!\wh)f_[A-Za-z0-9]{30,}"), "token", ("hf_",)),
    _Shape(re.compile(r"n(?<!\wn)pm_[A-Za-z0-9]{36}\b"), "token", ("npm_",)),
    _Shape(re.compile(r"p(?<!\wp)ypi-[A-Za-z0-9_-]{50,}"), "token", ("pypi-",)),
    _Shape(re.compile(r"e(?<!\we)yJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "token", ("eyj",)),
    _Shape(re.compile(r"[bB](?<!\w[bB])(?i:earer)\s+(?!‹)[A-Za-z0-9._~+/-]{16,}=*"), "token", ("bearer",)),
    _Shape(
        re.compile(
            r"[aA](?<!\w[aA])(?i:uthorization)[\"']?\s*[:=]\s*[\"']?(?i:basic|digest)\s+(?P<value>(?!‹)[^\s\"']{6,})"
        ),
        "credentials",
        ("authorization",),
        check=_value("credentials"),
        anchored=True,
    ),
    _Shape(
        re.compile(r"[pP](?<![a-zA-Z0-9][pP])(?i:in)(?:[ _-]?(?i:code))?[ \t]+(?P<value>[0-9]{4,8})(?![\w.,:/-])"),
        "PIN",
        ("pin",),
        check=_value("PIN"),
        anchored=True,
    ),
    _Shape(
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9_/-]{16,})"),
        "webhook",
        ("hooks.slack",),
        check=_value("webhook"),
    ),
    _Shape(
        re.compile(r"/webhooks/(?P<value>[0-9]{6,}/[A-Za-z0-9_-]{20,})"),
        "webhook",
        ("/webhooks/",),
        check=_value("webhook"),
    ),
    _Shape(
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nr])*(?:-----END [A-Z ]*PRIVATE KEY-----)?"
        ),
        "private key",
        ("-----begin",),
    ),
    _Shape(re.compile(r"[0-9](?<!\w[0-9])[0-9]{5,}:[A-Za-z0-9_-]{30,}\b"), "token", digits=True),  # a bot token
    _Shape(re.compile(r"[0-9](?<!\w[0-9])(?:[ -]?[0-9]){12,18}\b"), "card number", digits=True, check=_card),
)
"""Labelled values, credentials in URLs and commands, seed phrases, recovery codes, keys and tokens by their
shapes, private keys and card numbers."""


def _trie(words: Iterable[str]) -> str:
    """One pattern matching any of ``words``, as a prefix tree (``p(?:ass|in|w)|…``): the engine tries only the
    branch of the character it is at, not every word (a flat alternation of the 70 took twice as long)."""
    unique = sorted(set(words))
    kept = [w for w in unique if not any(w != o and w.startswith(o) for o in unique)]
    heads: dict[str, list[str]] = {}
    for word in kept:
        heads.setdefault(word[0], []).append(word[1:])
    parts = []
    for head, rests in heads.items():
        if rests == [""]:
            parts.append(re.escape(head))
        else:
            inner = _trie(rests)
            parts.append(re.escape(head) + (f"(?:{inner})" if len(rests) > 1 else inner))
    return "|".join(parts)


_TRIGGER_WORDS = sorted({t for shape in _SHAPES for t in shape.triggers}, key=len)
_TRIGGERS = re.compile(_trie(_TRIGGER_WORDS))
_FOUND_WORDS = {
    word: tuple(i for i, shape in enumerate(_SHAPES) if any(t.startswith(word) for t in shape.triggers))
    for word in _TRIGGER_WORDS
}
"""A word the trigger pattern finds (the shortest of those that start alike) → the shapes it may start."""
_INSIDE = {word: next((o for o in _TRIGGER_WORDS if o != word and o in word), None) for word in _TRIGGER_WORDS}
"""A shorter trigger inside each (``pass`` in ``pgpass``): where that one is missing, so is this one."""
_SHORT = 400
"""Up to this long, the trigger pattern finds the trigger words of a text (one search for most texts, which hold
none); a longer text is searched for each word instead (a substring search over many characters is faster than
the pattern, which tries a branch at every common letter)."""
_RUN = re.compile("[0-9]{4}")


def _triggered(text: str, low: str) -> dict[int, list[int]]:
    """The shapes to try on ``text`` → where their matches may start (anchored shapes; empty for the others)."""
    shapes: dict[int, list[int]] = {}
    if len(text) <= _SHORT:
        for hit in _TRIGGERS.finditer(low):
            for i in _FOUND_WORDS[hit[0]]:
                shapes.setdefault(i, []).append(hit.start())
        return shapes
    present: set[str] = set()
    for word in _TRIGGER_WORDS:
        inside = _INSIDE[word]
        if (inside is None or inside in present) and word in low:
            present.add(word)
    for i, shape in enumerate(_SHAPES):
        words = present.intersection(shape.triggers)
        if words:
            starts = shapes.setdefault(i, [])
            if shape.anchored:
                for word in words:
                    at = low.find(word)
                    while at >= 0:
                        starts.append(at)
                        at = low.find(word, at + 1)
    return shapes


# -- answers given as secrets ------------------------------------------------------------------------------------

_KEPT: dict[str, str] = {}
"""Answers given as secrets (stripped) → kind, the newest last."""
_KEPT_PARTS: dict[str, tuple[int, str]] = {}
"""Texts to find anywhere → (how many characters of each end are not the secret, kind)."""
KEPT_MAX = 32
_WORD_EDGES = ".,;:!?()[]\"'"
generation = 0
"""Counts :func:`keep_out` calls: the step's caches of texts already redacted are dropped when it changes."""


def keep_out(answer: str, kind: str) -> str:
    """From now on, in this process, find ``answer`` — given to a question that asked for a secret — as a secret
    of ``kind``: the whole text, the same text quoted (in a JSON row), the whole text inside others when it is 8
    characters or more, and its words of 6 or more that hold a digit or a sign (``hunter2`` of ``hunter2 is
    it``). The newest :data:`KEPT_MAX` answers are kept. Returns what the answer is replaced by."""
    global generation
    answer = answer.strip()
    if not answer:
        return answer
    _KEPT.pop(answer, None)
    _KEPT[answer] = kind
    while len(_KEPT) > KEPT_MAX:
        del _KEPT[next(iter(_KEPT))]
    _KEPT_PARTS.clear()
    for kept, its_kind in _KEPT.items():
        for encoded in (json.dumps(kept, ensure_ascii=False), json.dumps(kept)):
            _KEPT_PARTS[encoded] = (1, its_kind)
        if len(kept) >= 8:
            _KEPT_PARTS[kept] = (0, its_kind)
        for word in kept.split():
            word = word.strip(_WORD_EDGES)
            if len(word) >= 6 and not word.isalpha() and not (word.isdigit() and len(word) < 8):
                _KEPT_PARTS[word] = (0, its_kind)
    generation += 1
    return mark(kind)


def _kept_in(text: str) -> list[Found]:
    stripped = text.strip()
    if stripped in _KEPT:
        start = text.index(stripped)
        return [(start, start + len(stripped), mark(_KEPT[stripped]))]
    out = []
    for part, (trim, kind) in _KEPT_PARTS.items():
        at = text.find(part)
        while at >= 0:
            out.append((at + trim, at + len(part) - trim, mark(kind)))
            at = text.find(part, at + len(part))
    return out


# -- the detector -------------------------------------------------------------------------------------------------


def found(text: str) -> list[Found]:
    """What the detector finds in ``text``: (start, end, replacement), in order, none overlapping."""
    result = _kept_in(text) if _KEPT else []
    if len(text) < 5:  # "pin:1" is the shortest secret it knows
        return result
    low = text.lower()
    digits = _RUN.search(text) is not None  # neither a card number nor a bot token without four digits in a row
    if not digits and len(text) <= _SHORT and _TRIGGERS.search(low) is None:
        return result  # most text: one lower-casing and two searches
    shapes = _triggered(text, low)
    aligned = len(low) == len(text)  # lower-casing may change the length: "İ" becomes two characters
    for i, shape in enumerate(_SHAPES):
        if shape.digits:
            if not digits:
                continue
            matches: Iterable[re.Match[str]] = shape.pattern.finditer(text)
        elif i not in shapes:
            continue
        elif shape.anchored and aligned:
            matches = _anchored(shape.pattern, text, shapes[i])
        else:
            matches = shape.pattern.finditer(text)
        check = shape.check
        for match in matches:
            if check is None:
                result.append((match.start(), match.end(), mark(shape.kind or "secret")))
            elif (finding := check(match, text)) is not None:
                result.append(finding)
    if len(result) > 1:
        result.sort(key=lambda f: (f[0], f[0] - f[1]))
        kept = [result[0]]
        for item in result[1:]:
            if item[0] >= kept[-1][1]:
                kept.append(item)
        result = kept
    return result


def _anchored(pattern: re.Pattern[str], text: str, starts: list[int]) -> list[re.Match[str]]:
    matched, end = [], 0
    for at in sorted(set(starts)):
        if at >= end and (match := pattern.match(text, at)) is not None:
            matched.append(match)
            end = match.end()
    return matched


def may_hold(text: str) -> bool:
    """Whether ``text`` holds a trigger word or four digits in a row: what :func:`found` needs to look further."""
    return _RUN.search(text) is not None or _TRIGGERS.search(text.lower()) is not None


def find_secret(text: str) -> str | None:
    """The kind of the first secret the detector finds in ``text`` (None: nothing that looks like one)."""
    result = found(text)
    return result[0][2][len("‹redacted: ") : -1] if result else None


def secret_in(text: str) -> bool:
    """Whether ``text`` looks like it holds a credential (what ``remember`` refuses)."""
    return bool(found(text))


def redact_text(text: str) -> str:
    """``text`` with what the detector recognises replaced by ``‹redacted: kind›``."""
    result = found(text)
    if not result:
        return text
    out, at = [], 0
    for start, end, replacement in result:
        out += [text[at:start], replacement]
        at = end
    out.append(text[at:])
    return "".join(out)


_ASKS = re.compile(
    r"(?<!\w)(?:pass(?:word|wd|phrase|code|wort)|pwd|pin(?:[ _-]?code)?|secret|token|api[ _-]?key"
    r"|(?:private|secret|access|ssh|wi-?fi|wlan|wpa2?|network|signing|license|licence)[ _-]key|credentials?"
    r"|cv[cv]2?|kennwort|geheimzahl|mot de passe|mdp|contrase[ñn]a|senha|seed[ _-]?phrase|recovery[ _-]phrase"
    r"|mnemonic|(?:recovery|backup)[ _-]codes?)(?![\w-])"
    r"|密码|口令|密钥|私钥|令牌|助记词|パスワード|暗証番号|비밀번호|пароль",
    re.IGNORECASE,
)


def asks_for_secret(question: str) -> str | None:
    """The kind of secret ``question`` asks for ("What is the wifi password?": ``password``), None when it asks
    for none of the detector's labels."""
    asked = _ASKS.search(question)
    if asked is None:
        return None
    word = asked[0].lower()
    for prefix, kind in (("seed", "seed phrase"), ("recovery phrase", "seed phrase"), ("mnemonic", "seed phrase")):
        if word.startswith(prefix):
            return kind
    if word.endswith(("code", "codes")) and not word.startswith("pin") and "pass" not in word:
        return "recovery code"
    if word.endswith("key") and not word.startswith("api"):
        return label_kind("key", re.split(r"[ _-]", word)[0])
    return label_kind(word.replace(" ", "").replace("_", "").replace("-", ""))
