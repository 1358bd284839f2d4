"""Labelled values, credentials in URLs and commands, seed phrases and recovery codes: the detector's patterns
(:mod:`bot.redaction.detector`) and the checks that turn a match into a finding, or into none when the words
around it show an ordinary sentence or code (see the detector's docstring for what counts)."""

from __future__ import annotations

import re

from bot.redaction.words import (
    ALONE_STOP,
    BOOLEANS,
    CJK_STOP,
    COLON_STOP,
    CONTINUE_STOP,
    IS_STOP,
    KEY_QUALIFIERS,
    NOT_USERS,
    PASS_QUALIFIERS,
    label_kind,
)

Found = tuple[int, int, str]
"""(start, end, replacement)."""


def mark(kind: str) -> str:
    """What a secret of ``kind`` is replaced by."""
    return f"‹redacted: {kind}›"


# -- labelled values ----------------------------------------------------------------------------------------

# Each pattern starts with a character class or a literal (the regular-expression engine then skips every other
# position at C speed; an alternation under IGNORECASE was fifty times slower), then checks with a look-behind that
# a word starts there: not after a letter or digit, but a capital after a small letter (``accessToken``).
WORD_START = r"(?<![a-zA-Z0-9][a-z])(?<![A-Z0-9][A-Z])"
LABEL = re.compile(
    r"[pPsStTkKaAcCmMgG]" + WORD_START + r"(?i:(?<=p)(?:ass(?:word|wd|phrase|code|wort)?|gpass(?:word)?|wd?"
    r"|in(?:[ _-]?code)?)|(?<=s)(?:ecret|ig(?:nature)?|chl[üu]ssel|enha)|(?<=t)oken|(?<=k)(?:ey|ennwort)"
    r"|(?<=a)pi[ _-]?key|(?<=c)(?:redentials?|v[cv]2?|ontrase[ñn]a|l[ée] (?:api|secr[èe]te|priv[ée]e))"
    r"|(?<=m)(?:ot de passe|dp)|(?<=g)eheimzahl)(?!\w)(?![-.]\w)"
)
"""A label word at the start of a word or a name's part; it must end the name (``DB_PASSWORD``, not
``password_file``)."""
_NO_COPULA = frozenset({"pw", "pwd", "sig", "signature"})
_URL_ONLY = frozenset({"sig", "signature", "key"})
_AMBIGUOUS = frozenset(
    {"pass", "pin", "token", "secret", "key", "apikey", "credential", "credentials", "sig", "signature", "schlüssel"}
)
"""Words that head ordinary sentences too ("Token: the rate limiter …", "make it pass: …"): a value after their
colon is checked against the same ordinary words as after a copula."""

_SEP = re.compile(
    r"(?P<close>\\?[\"'])?"
    r"(?P<via>[ \t]+(?i:for|of|to|on|für|vom|von|pour|du|de|para|do|da)(?:[ \t]+[^\s:=：\"'\\]{1,30}){1,3}?)?"
    r"(?:[ \t]*(?P<eq>=>?|:=)(?!=)|[ \t]*(?P<colon>(?::(?![:/=])|：)(?:[ \t]*\r?\n)?)"
    r"|[ \t]+(?P<to>(?i:(?:(?:was|is|has been|got)[ \t]+)?(?:changed|set|reset|updated)[ \t]+to|to))(?![\w])"
    r"|[ \t]+(?P<is>(?i:is|are|was|ist|lautet|sind|war|est|es|é))(?![\w'’])(?:[ \t]*[:：])?|(?P<s>['’]s))"
    r"[ \t]*(?P<open>\\?[\"'])?"
)
"""What follows a label: an optional closing quote (``"password":``), "for …", then ``=`` (``=>``, ``:=``), ``:``
or a copula (``is``, ``'s``, ``changed to``; ``to`` after set, change, reset or update: "set the password to …")."""
_SET = re.compile(r"(?i:\b(?:set|change|changed|reset|update|updated)\b)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_WORD = re.compile(r"(?:[^\s\"\\]|\\(?![nrtu\"\\/]))+")
"""A word of a value: up to a space, a double quote or a JSON escape (the redaction step also looks at JSON)."""
_TOKEN = re.compile(r"(?:[^\s\"'\\]|\\(?![nrtu\"\\/]))+")
_URL_TOKEN = re.compile(r"[^\s\"'\\&#]+")
_SPACES = re.compile(r"[ \t]+")
_INTL_VALUE = re.compile(r"[^\s，。；！？、,;\"'」”]+")
_PREV_WORD = re.compile(r"([A-Za-z][\w-]*)[ \t]$")
_PLACEHOLDER = re.compile(
    r"\$\{|\$[A-Z_][A-Z0-9_]*(?![^\s\"',;)])|%\(|\{|<[^<>\s]*>|[*•]+[.,;]?$|\?$|%s$|.*(?:…|\.\.\.)[`,;)]*$|‹",
    re.ASCII,
)
"""Not a value but a reference to one, a mask or an example cut short: ``${TOKEN}``, ``$API_KEY``, ``{password}``,
``<your-token>``, ``***``, ``123456:ABC…``."""
_CODE = re.compile(r"[(\[:]|[A-Za-z_][\w.]*[(\[]|[a-z_]+(?:\.[a-z_]+)+[,;)\]}]*$|[A-Z_][A-Z0-9_]*[,)}\]]")
"""Code, not a value: a call, a subscript, an attribute (``get_token()``, ``os.environ[…]``, ``self.token``), a
constant passed on (``"password": TOKEN}``), a tuple or list."""
_IDENTIFIER = re.compile(r"[A-Za-z_]+")
_CLAUSE_END = frozenset(",;.!?。，；！？…)")
_BULLET = re.compile(r"[-*•]")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
MAX_WORDS = 8
"""The most words a phrase value takes (a passphrase; a seed phrase has a rule of its own)."""


def labelled(match: re.Match[str], text: str) -> Found | None:
    start, end = match.span()
    norm = match[0].lower().replace(" ", "").replace("_", "").replace("-", "")
    if norm.startswith("pgpass"):
        norm = norm[2:]
    prev = text[start - 1] if start else ""
    if prev.isalpha() and not (prev.islower() and text[start].isupper()):
        return None  # inside a word of another script's letters
    name_start = start
    while name_start > 0 and start - name_start < 80 and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    in_url = name_start > 0 and text[name_start - 1] in "?&;#"
    qualifier = ""
    if norm == "key":
        qualifier = _qualifier(text, name_start, start)
        if qualifier not in KEY_QUALIFIERS and not (in_url and name_start == start):  # ?key=, not ?sort_key=
            return None
    elif norm == "pass" and name_start < start and _qualifier(text, name_start, start) not in PASS_QUALIFIERS:
        return None  # DB_PASS, SMTP_PASS; not --min-pass, first_pass
    elif norm in _URL_ONLY and not in_url:
        return None
    kind = label_kind(norm, qualifier)
    sep = _SEP.match(text, end)
    if sep is None:
        if text.startswith(">", end) and text.endswith("<", 0, start):  # <password>hunter2</password>
            close = text.find("<", end + 1, end + 200)
            return (end + 1, close, mark(kind)) if close > end + 1 and "\n" not in text[end:close] else None
        if (
            text.startswith("-", name_start)
            and (gap := _SPACES.match(text, end)) is not None
            and (name_start + 2 >= start or _qualifier(text, name_start, start) in PASS_QUALIFIERS | KEY_QUALIFIERS)
        ):
            return _one_word(text, gap.end(), kind, label=norm, flag=True)  # --password hunter2
        return None
    at = sep.end()
    ambiguous = norm in _AMBIGUOUS
    if sep["open"]:
        return _quoted(text, at, sep["open"], kind, strict=ambiguous and bool(sep["via"]))
    if sep["eq"]:
        spaced = text[end:at].strip(" \t") != text[end:at]
        return _one_word(text, at, kind, url=in_url, spaced=spaced, label=norm, name=text[name_start:end])
    copula = bool(sep["is"] or sep["s"] or sep["to"])
    if copula and norm in _NO_COPULA:
        return None
    if sep["to"] and sep["to"].lower() == "to" and _SET.search(text, max(0, start - 40), start) is None:
        return None  # "the password to the server" without a verb that sets it
    after_newline = "\n" in (sep["colon"] or "")
    if ambiguous and after_newline:
        return None  # "… and export its token:\n   `export TOKEN=…`"
    if sep["colon"] and text[end:at].startswith((" :", "\t:")) and not text[at - 1].isspace():
        return None  # reStructuredText: "a token :meth:`take` spent"
    if norm == "pass" and not _field_start(text, name_start):
        return None  # "make the test pass: the discount …"
    return _phrase(text, at, kind, copula=copula, ambiguous=ambiguous, after_newline=after_newline)


def _qualifier(text: str, name_start: int, start: int) -> str:
    """The word before ``key``: in its name (``AWS_SECRET_ACCESS_KEY``, ``accessKey``) or before it (``Wi-Fi key``)."""
    if name_start < start:
        parts = _CAMEL.findall(text[name_start:start])
        return parts[-1].lower() if parts else ""
    before = _PREV_WORD.search(text, max(0, start - 24), start)
    return before[1].lower().replace("-", "") if before else ""


def _quoted(text: str, at: int, quote: str, kind: str, *, strict: bool = False) -> Found | None:
    """A quoted value, to its closing quote on the same line; ``strict``: only one that looks made up (after "the
    token for a person:")."""
    close = text.find(quote, at)
    line = text.find("\n", at)
    if close <= at + 2 or (0 <= line < close) or close - at > 200:
        return None  # none, or one or two characters: not a secret
    value = text[at:close]
    if _PLACEHOLDER.match(value) or value.lower() in BOOLEANS or (strict and not _made_up(value)):
        return None
    return at, close, mark(kind)


def _one_word(
    text: str,
    at: int,
    kind: str,
    *,
    label: str,
    url: bool = False,
    spaced: bool = False,
    name: str = "",
    flag: bool = False,
) -> Found | None:
    """The value after ``=`` (or a command-line flag): one word."""
    word = (_URL_TOKEN if url else _TOKEN).match(text, at)
    if word is None:
        return None
    value = word[0]
    low = value.lower()
    if _PLACEHOLDER.match(value) or low.rstrip(",;") in BOOLEANS or _CODE.match(value):
        return None
    if flag and (value.startswith("-") or low in IS_STOP or low in CONTINUE_STOP):
        return None  # "use --token to sign in"
    bare = value.rstrip(",;)]}")
    if (  # code that passes a name on: "token = access_token", "password=password", "connect(password=pw)"
        not url
        and _IDENTIFIER.fullmatch(bare)
        and (spaced or "_" in bare or bare.lower() in (label, name.lower()) or bare != value.rstrip(";"))
    ):
        return None
    return word.start(), word.end(), mark(kind)


def _phrase(
    text: str,
    at: int,
    kind: str,
    *,
    copula: bool,
    ambiguous: bool = False,
    after_newline: bool = False,
    words_are: re.Pattern[str] = _WORD,
) -> Found | None:
    """The value after ``:`` or a copula: the phrase (see the module's docstring). After a copula, a first word
    that is an ordinary word of a sentence means no secret follows ("is on the card", "is stored"); after a label
    that heads ordinary sentences too (token, secret, pass, PIN, key), the first word must look made up (a digit, a
    sign, a capital inside, 16 characters or more)."""
    first = words_are.match(text, at)
    if first is None:
        return None
    value = first[0]
    low = value.lower().rstrip(".,;:!?")
    if (
        low in (IS_STOP if copula else COLON_STOP)
        or low in BOOLEANS
        or _PLACEHOLDER.match(value)
        or _CODE.match(value)
        or (not copula and _ANNOTATION.match(text, at))
        or (copula and len(low) > 4 and low.isalpha() and low.endswith(("ed", "en")))  # "is stored", "is taken"
        or (after_newline and _BULLET.match(value))
        or (ambiguous and not _made_up(value.rstrip(".,;:!?)]}")))
    ):
        return None
    end, words = first.end(), 1
    while words < MAX_WORDS and text[end - 1] not in _CLAUSE_END:
        gap = _SPACES.match(text, end)
        nxt = words_are.match(text, gap.end()) if gap is not None else None
        if nxt is None:
            break
        word = nxt[0]
        if (
            word.lower().rstrip(".,;:!?") in CONTINUE_STOP
            or word.endswith((":", "："))
            or "=" in word
            or word[0] in "#([‹—-"
            or (value[0].isascii() and not word[0].isascii())  # "パスワードは hunter2 です"
            or len(word) > 40
            or nxt.end() - at > 120
        ):
            break
        end, words = nxt.end(), words + 1
    if words == 1 and copula and low in ALONE_STOP:
        return None  # "the password is correct"
    return at, end, mark(kind)


INTL = re.compile(
    r"(?P<label>密码|口令|密钥|私钥|令牌|パスワード|暗証番号|비밀번호|[пП]ароль|ПАРОЛЬ)"
    r"(?:[ \t]*(?:от|для)[ \t]+[^\s:：=]{1,30})?"
    r"(?:[ \t]*(?:(?P<colon>[:：=—])|(?P<is>是|为|為|は|는|은))[ \t]*(?:[:：][ \t]*)?(?P<open>[\"'「“])?"
    r"|[ \t]+(?=[!-~]*[0-9]))"  # 密码 123456
)


_ANNOTATION = re.compile(
    r"(?:str|int|float|bool|bytes|dict|list|tuple|set|object|Any|None|Optional|SecretStr)\b"
    r"|_?[A-Z]\w*(?:\[[^\]\s]*\]?)?(?=[,)\]=]|\s*(?:\||=))"
)
"""A type annotation after a colon (``token: str = ""``, ``token: _Token | None``), not a value."""


def _made_up(word: str) -> bool:
    """Whether ``word`` looks made up rather than taken from a dictionary: a digit, a sign, a capital after a small
    letter, or 16 characters or more."""
    if len(word) >= 16:
        return True
    small = False
    for ch in word:
        if ch.isdigit() or not (ch.isalpha() or ch in "'’") or (small and ch.isupper()):
            return True
        small = small or ch.islower()
    return False


def _field_start(text: str, start: int) -> bool:
    """Whether a label at ``start`` begins a field (``pass: …`` at the start of a line, after ``,`` ``;`` ``|``
    ``/`` or after a user name on the same line) rather than ends a sentence ("make the test pass: …")."""
    line = text.rfind("\n", 0, start) + 1
    before = text[line:start].rstrip()
    if not before.strip("-*•> \t") or before[-1] in ",;|/(":
        return True
    low = before.lower()
    return any(word in low for word in ("user", "login", "email", "account", "name"))


def intl(match: re.Match[str], text: str) -> Found | None:
    kind = label_kind(match["label"].lower())
    at = match.end()
    if match["open"]:
        return _quoted(text, at, {"「": "」", "“": "”"}.get(match["open"], match["open"]), kind)
    value = _INTL_VALUE.match(text, at)
    if value is None or value[0].startswith("‹") or value[0].lower() in BOOLEANS:
        return None
    if not match["colon"] and not ("!" <= value[0][0] <= "~"):
        return None  # "密码是多少" asks; a password after 是 is written in ASCII
    if any(value[0].startswith(w) for w in CJK_STOP):
        return None
    if "!" <= value[0][0] <= "~":
        return _phrase(text, at, kind, copula=False, words_are=_INTL_VALUE)
    return value.start(), value.end(), mark(kind)


# -- credentials in URLs and commands, seed phrases and recovery codes ---------------------------------------

URL_CREDENTIALS = re.compile(r":(?P<value>[^\s/?#\"'<>\\]+)@(?=[\w\[])")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+%~-")


def url_credentials(match: re.Match[str], text: str) -> Found | None:
    """``scheme://user:password@host`` (the user may be empty), or ``user:password@host`` when ``user`` is a name
    (not ``mailto``, ``cc`` …)."""
    colon = start = match.start()
    while start > 0 and colon - start < 64 and text[start - 1] in _USER_CHARS:
        start -= 1
    user = text[start:colon]
    if not text.endswith("//", 0, start) and (
        not user or not (user[0].isalpha() or user[0] == "_") or user.lower() in NOT_USERS
    ):
        return None
    value = match["value"]
    if value.startswith("‹") or _PLACEHOLDER.match(value) or value.lower() == "password":
        return None  # a template: postgresql://user:password@host/db
    return match.start("value"), match.end("value"), mark("password")


CURL = re.compile(r"-(?<!\S-)(?:u|-user)(?:[ \t]+|=)?[\"']?[^\s:\"'‹]+:(?P<value>(?!‹)[^\s\"']+)")
MYSQL = re.compile(
    r"[ms](?<![\w-][ms])(?:(?<=m)(?:ysql|ariadb)\w*|(?<=s)shpass)(?![\w-])[^\n|;&]{0,200}?(?<=[ \t])-p[ \t]*"
    r"(?P<value>(?![-‹$])(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+))"
)
SEED = re.compile(
    r"[sSrRbBmMwWpP助]" + WORD_START + r"(?i:(?<=s)eed[ _-]?(?:phrase|words)|(?<=r)ecovery[ _-]phrase"
    r"|(?<=b)ackup[ _-]phrase|(?<=m)nemonic|(?<=w)(?:allet[ _-]seed|iederherstellungsphrase)"
    r"|(?<=p)hrase de (?:récupération|secours)|(?<=助)记词)"
    r"[^\n]{0,40}?[ \t:：=\n]\s*"
    r"(?P<value>(?:(?:\d{1,2}[.):]?\s+)?[a-z]{3,8}[\s,]+){11,29}(?:\d{1,2}[.):]?\s+)?[a-z]{3,8})(?!\w)"
)
_CODE_ITEM = r"(?:(?:[-*•]|\d{1,2}[.)])[ \t]+)?(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9]{3,12}(?:-[A-Za-z0-9]{3,12}){0,3}(?!\w)"
RECOVERY_CODES = re.compile(
    r"[rRbB2wWcC恢备]" + WORD_START + r"(?i:(?:(?<=r)ecovery|(?<=b)ackup|(?<=2)fa)[ _-]?codes?"
    r"|(?<=w)iederherstellungscodes?|(?<=c)odes? de (?:récupération|secours)|(?<=恢)复码|(?<=备)用码)"
    r"[^\n:：]{0,30}?(?:[ \t]*[:：]|[ \t]+(?i:are|is|sind|ist|sont|est)(?!\w)[ \t]*[:：]?)\s*"
    rf"(?P<value>{_CODE_ITEM}(?:[\s,;]+{_CODE_ITEM}){{0,19}})"
)


def bare(match: re.Match[str], text: str) -> Found | None:
    """``password Tr0ub4dor&3``: a value that mixes letters and digits after a password's label."""
    start = match.start()
    if start and text[start - 1].isalnum():
        return None
    if (
        "=" in match["value"]
        or match["value"][0] in "`([{"
        or (match["label"].lower() == "pass" and not _field_start(text, start))
    ):
        return None  # "should pass `max_retries=0`"
    return match.start("value"), match.end("value"), mark(label_kind(match["label"].lower().replace(" ", "")))
