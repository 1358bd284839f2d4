"""The detector's words (:mod:`bot.redaction.detector`): what a label's secret is called, the words a key's
qualifier may be, and the ordinary words that show a label is not followed by a secret."""

from __future__ import annotations

_KINDS = {
    **dict.fromkeys(
        ("password", "passwd", "passphrase", "passcode", "pass", "pwd", "pw", "passwort", "kennwort", "motdepasse",
         "mdp", "contraseña", "contrasena", "senha", "密码", "口令", "パスワード", "비밀번호", "пароль"),
        "password",
    ),
    **dict.fromkeys(("pin", "pincode", "geheimzahl", "暗証番号"), "PIN"),
    "apikey": "API key",
    **dict.fromkeys(("credential", "credentials"), "credentials"),
    **dict.fromkeys(("cvc", "cvv", "cvc2", "cvv2"), "card code"),
    **dict.fromkeys(("sig", "signature"), "signature"),
    "私钥": "private key",
    **dict.fromkeys(("密钥", "schlüssel", "schlussel"), "key"),
    "secret": "secret",
    "token": "token",
    "令牌": "token",
}  # fmt: skip
_PRIVATE = frozenset({"private", "ssh", "deploy", "gpg", "pgp"})


def label_kind(label: str, qualifier: str = "") -> str:
    """The kind of secret after ``label`` (lower case, without spaces, ``_`` or ``-``; ``qualifier``: the word
    before a ``key``)."""
    if label == "key":
        if qualifier == "api":
            return "API key"
        if qualifier in _PRIVATE:
            return "private key"
        return f"{qualifier} key" if qualifier.isalpha() and qualifier.isascii() else "key"
    if label.startswith(("clé", "cle")):  # clé API, clé secrète, clé privée
        return "API key" if label.endswith("api") else "private key" if "priv" in label else "key"
    return _KINDS.get(label, label)


KEY_QUALIFIERS = frozenset(
    "api access secret private signing encryption master license licence deploy ssh gpg pgp app client auth "
    "webhook session wifi fi wlan wpa wpa2 network product activation shared consumer subscription account "
    "service storage bot admin root cloudflare openai anthropic gemini stripe sendgrid twilio mailgun".split()
)
"""A ``key`` counts as a label only after one of these (``API key``, ``AWS_SECRET_ACCESS_KEY``, ``Wi-Fi key``;
not ``sort_key`` or ``primary key``), or as a URL's query parameter (``?key=``)."""

PASS_QUALIFIERS = frozenset(
    "db database user admin root smtp mail email imap pop3 ftp sftp ssh vpn proxy mysql redis postgres pg wifi "
    "wlan login account app bot api client".split()
)
"""A name ending in ``pass`` (or a command-line flag ``--…-password``) counts after one of these (``DB_PASS``,
``SMTP_PASS``), not after others (``--min-pass``, ``first_pass``)."""

BOOLEANS = frozenset("true false yes no on off null none nil undefined ~ - n/a".split())
"""Values that are settings, not secrets (``auth: false``, ``pin = None``)."""

IS_STOP = frozenset(
    # English: what follows "is" when no secret does ("the password is on the card", "the token is given back")
    "a an the this that these those my your his her its our their some any no not never always still now also "
    "already just only too very so quite really usually often probably then here there being been be set given "
    "required needed stored saved sent shown hidden kept changed reset expired missing empty wrong incorrect "
    "invalid valid weak strong short long secure safe same different what which who whom whose how where when why "
    "if and or but on in at by for from to with without under inside outside behind above below near of off out "
    "up down over about after before into onto like as case-sensitive optional mandatory unknown ok okay fine "
    "good bad important secret private public necessary enough less more used done gone one all each every "
    "mine yours ours theirs hers printed written shown somewhere it is are was were will would should can could "
    "something anything whatever everything nobody nothing everyone everybody someone somebody anyone anybody "
    "noone fresh new old live active stale "
    "unique random opaque bound static dynamic temporary permanent reusable single-use short-lived long-lived "
    "must may might generated created rotated hashed encrypted "
    # German, French, Spanish, Portuguese
    "nicht nie noch schon zu sehr der die das den dem ein eine einen mein meine dein deine sein seine ihr ihre "
    "unser unsere euer falsch richtig leer geheim hier da dort jetzt auch nur immer im in am auf unter bei mit "
    "ohne für von abgelaufen gespeichert geändert vergessen was wie wo welches "
    "pas jamais trop très le la les un une des mon ma mes ton ta son sa notre votre leur sur dans sous avec sans "
    "pour de du faux incorrect vide secret ici là déjà toujours encore aussi expiré changé oublié quoi quel quelle "
    "muy el los las mi tu su en para con sin cuál cual qué que "
    "não muito o os as um uma meu minha seu sua em com sem qual".split()
)
"""Words after a copula (is, ist, est …) that show no secret follows; also after the colon of a label that heads
ordinary sentences too (``Token: the rate limiter …``, ``make the test pass: the discount …``)."""

ALONE_STOP = frozenset("correct right fine good ready it this that them nobody nothing".split())
"""A copula's value of one word that is one of these is said about the secret ("the password is correct")."""

COLON_STOP = frozenset(
    "none null n/a na empty required optional hidden not see same unknown unchanged tbd todo the a an your".split()
)
"""Words after the colon of a password-like label that show no secret follows (``Password: required``)."""

CONTINUE_STOP = frozenset(
    "and or but so then because since which that who if when while where please thanks thank ok okay i you he "
    "she we they it do don't dont not can could would should will also just is are was were for to with from in "
    "on at of by as "
    "und oder aber dann weil bitte danke ich du er sie wir "
    "et ou mais puis parce merci je tu il elle nous vous "
    "y o pero porque gracias e mas obrigado".split()
)
"""A phrase value ends before one of these (``my password is hunter2 and my PIN is 1234``)."""

CJK_STOP = ("什么", "多少", "啥", "哪", "无", "空", "不", "错", "对", "正确", "忘", "何", "무엇", "뭐")
"""A value after 密码： (or は, 是 …) starting with one of these asks or tells about the secret, and holds none."""

NOT_USERS = frozenset(
    "mailto cc bcc to from email e-mail mail contact sip sips xmpp tel re fw fwd at reply-to sender author by "
    "via attn ping dm note tip see".split()
)
"""``word:name@host`` with one of these before the colon is an address, not ``user:password@host``."""
