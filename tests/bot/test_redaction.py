"""The redaction step: what the detector ``remember`` refuses with recognises is replaced by ``‹redacted: kind›``
wherever a call is stored or shown; ordinary text, ids and numbers are left alone; JSON stays JSON; redacting
twice changes nothing. :data:`SECRETS` and :data:`ORDINARY` are the detector's table: what an attacker typed
that must be hidden, and ordinary chat and code that must be kept as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.redaction import (
    Redaction,
    asks_for_secret,
    find_secret,
    keep_out,
    redact_json,
    redact_text,
    redact_value,
    secret_in,
)
from bot.redaction.detector import may_hold

R = "‹redacted: {}›".format
PW, TOKEN, CRED, SIG = R("password"), R("token"), R("credentials"), R("signature")
SEED = "abandon ability able about above absent absorb abstract absurd abuse access accident"
NUMBERED = "\n".join(f"{n}. {word}" for n, word in enumerate(SEED.split(), 1))
MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"

SECRETS = [
    # URLs: query parameters, credentials of any scheme, webhooks
    ("https://api.example.com/me?access_token=ya29abcDEF123&alt=json", f"https://api.example.com/me?access_token={TOKEN}&alt=json"),
    ("https://app.test/cb#id_token=abc123def456&state=x", f"https://app.test/cb#id_token={TOKEN}&state=x"),
    ("GET /f?X-Amz-Credential=AKIAX%2F2024&X-Amz-Signature=dead12", f"GET /f?X-Amz-Credential={CRED}&X-Amz-Signature={SIG}"),  # noqa: E501
    ("https://maps.test/geocode?address=x&key=abc123XYZ", f"https://maps.test/geocode?address=x&key={R('key')}"),
    ("https://x.test/hook?api_key=k9f8e7&page=2", f"https://x.test/hook?api_key={R('API key')}&page=2"),
    ("git clone https://alice:s3cretPass@github.com/org/repo.git", f"git clone https://alice:{PW}@github.com/org/repo.git"),
    ("connect to postgresql://bot:pw@db/app", f"connect to postgresql://bot:{PW}@db/app"),
    ("redis://:hunter2@cache:6379/0", f"redis://:{PW}@cache:6379/0"),
    ("amqp://guest:p@ss:w0rd@rabbit:5672", f"amqp://guest:{PW}@rabbit:5672"),
    ("log in as admin:Tr0ub4dor@10.0.0.5", f"log in as admin:{PW}@10.0.0.5"),
    ("webhook https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX", f"webhook https://hooks.slack.com/services/{R('webhook')}"),
    ("https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz_ABC", f"https://discord.com/api/webhooks/{R('webhook')}"),
    # commands
    ("curl -u admin:hunter2 https://api.test/", f"curl -u admin:{PW} https://api.test/"),
    ("curl --user=alice:wonderland9 https://x", f"curl --user=alice:{PW} https://x"),
    ("mysql -u root -pSECRET123 app", f"mysql -u root -p{PW} app"),
    ("mysql -u root -p SECRET123 app", f"mysql -u root -p {PW} app"),
    ("sshpass -p 'my pass' ssh host", f"sshpass -p {PW} ssh host"),
    ("tool --password hunter2x --verbose", f"tool --password {PW} --verbose"),
    ("tool --db-password=hunter2x", f"tool --db-password={PW}"),
    # environment and configuration
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY", f"export AWS_SECRET_ACCESS_KEY={R('access key')}"),
    ("GITHUB_TOKEN=abc123 npm publish", f"GITHUB_TOKEN={TOKEN} npm publish"),
    ("DB_PASSWORD=hunter", f"DB_PASSWORD={PW}"),
    ("SMTP_PASS=letmein", f"SMTP_PASS={PW}"),
    ("PGPASSWORD=hunter2 psql -h db", f"PGPASSWORD={PW} psql -h db"),
    ("OPENAI_API_KEY=abc123def", f"OPENAI_API_KEY={R('API key')}"),
    ("client_secret: Zx9-abc", f"client_secret: {R('secret')}"),
    ('{"api_key": "abc def"}', f'{{"api_key": "{R("API key")}"}}'),
    ("x-api-key: 123abc", f"x-api-key: {R('API key')}"),
    ("accessToken=abcdef123", f"accessToken={TOKEN}"),
    ('password = "hunter"', f'password = "{PW}"'),
    ("pw=hunter2", f"pw={PW}"),
    ("login: bob pw: hunter2", f"login: bob pw: {PW}"),
    ("user: bob, pass: letmein2", f"user: bob, pass: {PW}"),
    ("token=abc; and more", f"token={TOKEN} and more"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: Basic {R('credentials')}"),
    ("<password>hunter2</password>", f"<password>{PW}</password>"),
    ("password => 'x9y8z7'", f"password => '{PW}'"),
    # labels in prose: the phrase after ":" or "is", not the paragraph
    ("password: correct horse battery staple", f"password: {PW}"),
    ("password: correct horse battery staple\nthe next line stays", f"password: {PW}\nthe next line stays"),
    ("my passphrase is correct horse battery staple.", f"my passphrase is {PW}"),
    ("my password is hunter2 and my PIN is 1234", f"my password is {PW} and my PIN is {R('PIN')}"),
    ("the wifi password is hunter2, the guest one is open", f"the wifi password is {PW} the guest one is open"),
    ("password for the router is Tr0ub4dor&3", f"password for the router is {PW}"),
    ("Password:\nhunter2", f"Password:\n{PW}"),
    ("passcode: 7741", f"passcode: {PW}"),
    ("pwd: Sommer2024!", f"pwd: {PW}"),
    ("PIN code: 4821", f"PIN code: {R('PIN')}"),
    ("card PIN 4821", f"card PIN {R('PIN')}"),
    ("my password's hunter2", f"my password's {PW}"),
    ("the password was changed to Tr0ub4dor&3", f"the password was changed to {PW}"),
    ("set the wifi password to 'hunter2'", f"set the wifi password to '{PW}'"),
    ("cvv: 123", f"cvv: {R('card code')}"),
    ("the token is abc123def", f"the token is {TOKEN}"),
    ("the secret is 'open sesame'", f"the secret is '{R('secret')}'"),
    ("Wi-Fi key: 8f7e6d5c", f"Wi-Fi key: {R('wifi key')}"),
    ("private key: a1b2c3d4", f"private key: {R('private key')}"),
    # German, French, Spanish, Portuguese, Chinese, Japanese, Korean, Russian
    ("Mein Passwort ist hunter2", f"Mein Passwort ist {PW}"),
    ("Das WLAN-Passwort lautet Sommer2024", f"Das WLAN-Passwort lautet {PW}"),
    ("Kennwort: geheim123", f"Kennwort: {PW}"),
    ("Geheimzahl: 4821", f"Geheimzahl: {R('PIN')}"),
    ("WLAN-Schlüssel: abcd1234efgh", f"WLAN-Schlüssel: {R('key')}"),
    ("mon mot de passe est hunter2", f"mon mot de passe est {PW}"),
    ("mot de passe : Soleil!2024", f"mot de passe : {PW}"),
    ("mdp: azerty123", f"mdp: {PW}"),
    ("la contraseña es hunter2", f"la contraseña es {PW}"),
    ("senha: hunter2", f"senha: {PW}"),
    ("密码：hunter2", f"密码：{PW}"),
    ("我的密码是hunter2，别告诉别人", f"我的密码是{PW}，别告诉别人"),
    ("WiFi密码是 12345678", f"WiFi密码是 {PW}"),
    ("口令: abc123", f"口令: {PW}"),
    ("密码 123456", f"密码 {PW}"),
    ("密钥：Zx9abcdef", f"密钥：{R('key')}"),
    ("パスワードは hunter2 です", f"パスワードは {PW} です"),
    ("비밀번호는 hunter2", f"비밀번호는 {PW}"),
    ("пароль: hunter2", f"пароль: {PW}"),
    # seed phrases and recovery codes
    (f"seed phrase: {SEED}", f"seed phrase: {R('seed phrase')}"),
    (f"my recovery phrase is\n{NUMBERED}", f"my recovery phrase is\n{R('seed phrase')}"),
    (f"mnemonic: {MNEMONIC}", f"mnemonic: {R('seed phrase')}"),
    (f"助记词：{MNEMONIC}", f"助记词：{R('seed phrase')}"),
    ("GitHub recovery codes: 1a2b3-4c5d6 7e8f9-0a1b2 3c4d5-6e7f8", f"GitHub recovery codes: {R('recovery code')}"),
    ("backup codes are 1234 5678, 8765 4321", f"backup codes are {R('recovery code')}"),
    # keys and tokens by their shapes
    ("glpat-abcdefghijklmnopqrst1234", TOKEN),
    ("HF token hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", f"HF token {TOKEN}"),
    ("sk_live_abcdefghijklmnop1234", R("API key")),
    ("xapp-1-A0123-abcdefghij", TOKEN),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", TOKEN),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", TOKEN),
    ("ASIAABCDEFGHIJKLMNOP is temporary", f"{R('API key')} is temporary"),
]  # fmt: skip
"""Secrets an attacker typed (issue 61 and more): each text and what is kept of it."""

ORDINARY = [
    "the password policy is strict",
    "pw is short for password",
    "pwd prints the working directory",
    "I changed my password yesterday",
    "The Wi-Fi password is on the card by the kettle",
    "the password is never stored",
    "the password is correct",
    "set your password to something long",
    "the password to use is on the card",
    "pin 2 items to the board",
    "basic knowledge helps",
    "my password is the name of my dog",
    "Your API key is stored in .env",
    "its token is given back when the call fails",
    "the sender's token is taken when the event is admitted",
    "Token: the rate limiter hands one out per second",
    "a secret: nobody knows",
    "its pin is outside pyproject",
    "make test_total_with_discount pass: the discount is applied twice",
    "the tests should pass `max_retries=0` to the client",
    "--min-pass 0.95 --junit junit.xml",
    "the tokens were counted",
    "keyboard shortcuts: ctrl+c",
    "key: value",
    "primary key: id",
    "Signature: Best regards, Bob",
    "what is the seed phrase for?",
    "Recovery codes: keep them somewhere safe",
    "Passwort vergessen?",
    "le mot de passe est trop court",
    "密码是多少？",
    "忘记密码了怎么办",
    "密码学很有趣",
    # URLs, addresses, mentions, commands
    "https://example.com/search?q=password&page=2",
    "https://example.com/a?sort_key=name&max_tokens=100",
    "https://user@example.com:8443/path",
    "mail bob@example.com or alice@host",
    "mailto:bob@example.com",
    "cc:alice@example.com",
    "@channel please review",
    "ssh user@host",
    "git@github.com:org/repo.git",
    "meeting at 10:30@office",
    "mysql -u root -p",
    "python -u script.py",
    "git push -u origin main",
    "set DATABASE_URL to postgresql://user:password@host:5432/dbname",
    # code that names a secret but holds none
    "sort_key = name",
    "password = request.form['password']",
    "api_key = os.environ['OPENAI_API_KEY']",
    "token = get_token()",
    "self.token = token",
    "connect(password=password)",
    "connect(host, password=pw)",
    "secret = secret_value",
    "def check(self, name: str, password: str) -> bool:",
    "token: _Token | None = None",
    "api_key: str = ''",
    "SELECT 1 FROM fences WHERE token = ?",
    "max_tokens=1000",
    "token_count: 12",
    "auth: false",
    "pin = None",
    "password: required",
    "token: ${TELEGRAM_BOT_TOKEN}",
    "PASSWORD=$DB_PASS",
    "password = '{password}'",
    "api_key: <your-key>",
    "export TELEGRAM_BOT_TOKEN=123456:ABC…",
    "Your token is ***.",
    "Return a token :meth:`take` spent",
]
"""Ordinary chat and code: kept as written."""


@pytest.mark.parametrize(("text", "shown"), SECRETS)
def test_what_an_attacker_typed_is_hidden(text: str, shown: str) -> None:
    assert redact_text(text) == shown
    assert secret_in(text) and redact_text(shown) == shown, "redacting twice changes nothing"
    row = json.dumps({"role": "user", "text": text}, ensure_ascii=False)
    assert json.loads(redact_json(row))["text"] == shown, "a history row (JSON) is redacted the same"


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_chat_and_code_are_kept(text: str) -> None:
    assert redact_text(text) == text and not secret_in(text)
    row = json.dumps({"text": text}, ensure_ascii=False)
    assert redact_json(row) is row


def test_the_table_is_as_large_as_the_report_says() -> None:
    assert (len(SECRETS), len(ORDINARY)) == (len({t for t, _ in SECRETS}), len(set(ORDINARY)))
    assert len(SECRETS) >= 80 and len(ORDINARY) >= 65


def test_most_chat_messages_cost_one_lower_casing_and_two_searches() -> None:
    """The speed guard that does not race the clock: a chat message that holds no trigger word and no four digits
    in a row is done after the first look. Of the routing corpora's 6,700 messages, at most 8% look further, and
    none of them is taken for a secret but the two that hold one."""
    root = Path(__file__).resolve().parents[2]
    messages = [
        line.split("\t", 1)[1]
        for path in [*root.glob("bot/routing/corpus/*.tsv"), *root.glob("tests/data/routing/*/messages.tsv")]
        for line in path.read_text(encoding="utf-8").splitlines()
        if "\t" in line
    ]
    assert len(messages) > 6000
    assert sum(map(may_hold, messages)) / len(messages) < 0.08
    found = [m for m in messages if secret_in(m)]
    assert len(found) == 2 and all("postgres://app:secret@" in m or "AWS_SECRET_ACCESS_KEY=" in m for m in found)


@pytest.mark.parametrize(
    ("text", "shown", "kind"),
    [
        ("my password is hunter2-XYZ", "my password is ‹redacted: password›", "password"),
        ("Wifi passwd: s3cr3t!", "Wifi passwd: ‹redacted: password›", "password"),
        ("log in with password Tr0ub4dor&3", "log in with password ‹redacted: password›", "password"),
        ("the PIN = 4821", "the PIN = ‹redacted: PIN›", "PIN"),
        ("api key is abc123def", "api key is ‹redacted: API key›", "API key"),
        ("use sk-proj-abcdefghijklmnop1234 now", "use ‹redacted: API key› now", "API key"),
        ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "‹redacted: API key›", "API key"),
        ("slack xoxb-1234567890-abcdefghij", "slack ‹redacted: token›", "token"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", "‹redacted: token›", "token"),
        ("Authorization: Bearer abcdefghijklmnop.qrstuv", "Authorization: ‹redacted: token›", "token"),
        ("bot 123456789:AAHk-abcdefghijklmnopqrstuvwxyz012", "bot ‹redacted: token›", "token"),
        ("card 4111 1111 1111 1111, exp 12/29", "card ‹redacted: card number›, exp 12/29", "card number"),
        ("5555-5555-5555-4444", "‹redacted: card number›", "card number"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY----- ok",
            "‹redacted: private key› ok",
            "private key",
        ),
    ],
)
def test_the_detector_names_what_it_hides(text: str, shown: str, kind: str) -> None:
    assert redact_text(text) == shown
    assert find_secret(text) == kind and secret_in(text)
    assert redact_text(shown) == shown, "redacting twice changes nothing"


@pytest.mark.parametrize(
    "text",
    [
        "my favourite tea is genmaicha",
        "discord:1234567890123456789",  # a snowflake id: 19 digits, not a card (it starts with 1)
        "order 4111111111111112",  # fails the Luhn check
        "at 1732600000000 ms",  # a timestamp
        "the tokens were counted",
        "I changed my password yesterday",
        "call +49 30 1234 5678",
    ],
)
def test_ordinary_text_and_ids_are_left_alone(text: str) -> None:
    assert redact_text(text) == text and not secret_in(text)


def test_values_names_and_configured_secrets() -> None:
    r = Redaction(["configured-secret-value"])
    value = {
        "user": "bob",
        "api_key": "anything at all",
        "X-Api-Key": ["a", "b"],
        "note": "token=abc; and configured-secret-value",
        "count": 3,
        "token_count": 12,
        "provider_meta": {"gemini": {"thought_signature": "sk-abcdefghijklmnopqrst"}},
        "nested": [{"password": "p"}, "card 4111111111111111"],
    }
    assert r.value(value) == {
        "user": "bob",
        "api_key": "‹redacted: API key›",
        "X-Api-Key": "‹redacted: API key›",
        "note": "token=‹redacted: token› and ‹redacted: secret›",
        "count": 3,
        "token_count": 12,
        "provider_meta": {"gemini": {"thought_signature": "sk-abcdefghijklmnopqrst"}},  # opaque: handed back
        "nested": [{"password": "‹redacted: password›"}, "card ‹redacted: card number›"],
    }


def test_json_text_stays_json() -> None:
    plain = '{"role":"user","text":"hello"}'
    assert redact_json(plain) is plain, "nothing found: the very same text, nothing parsed"
    stored = redact_json(json.dumps({"text": 'my password is "hunter2"', "args": {"token": 5, "secret": "x"}}))
    assert json.loads(stored) == {
        "text": 'my password is "‹redacted: password›"',
        "args": {"token": 5, "secret": "‹redacted: secret›"},
    }
    assert redact_value({"fact": "my password is hunter2"}) == {"fact": "my password is ‹redacted: password›"}


def test_fields_redact_each_value_as_value_does_also_from_the_cache() -> None:
    """``fields`` (a trace event's fields) has fast paths: numbers as they are, and a short string under a name
    known to be ordinary from the cache of texts already redacted. The cache never lets a secret through: a text
    seen first under an ordinary name is still hidden under a secret's name, and a text with a secret in it is
    cached redacted."""

    class Level(int):
        pass

    r = Redaction(["configured-secret-value"])
    fields = {
        "status": "done",
        "token": "done",  # the same text as an ordinary field's, under a secret's name
        "password": "",
        "api_key": ["a"],
        "note": "my password is hunter2",
        "echo": "configured-secret-value",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "level": Level(2),
        "nested": {"cookie": "c", "text": "pin: 1234"},
        "words": ["sk-abcdefghijklmnopqrstuv", 7],
        "nothing": None,
    }
    expected = {k: r.value(v, k) for k, v in fields.items() if v is not None}
    assert expected["token"] == "‹redacted: token›" and expected["echo"] == "‹redacted: secret›"
    for _ in range(3):  # the first time fills the caches, then the fast paths answer
        assert r.fields(fields) == expected
    assert r.fields({"status": "done", "token": "done"}) == {"status": "done", "token": "‹redacted: token›"}
    assert r.fields({"value": "my password is hunter2"}) == {"value": "my password is ‹redacted: password›"}
    assert r.fields({"nothing": None, "n": 0, "empty": ""}) == {"n": 0, "empty": ""}


def test_a_limit_cuts_long_texts_after_redacting_them() -> None:
    class Short(Redaction):
        limit = 20

    r = Short()
    long = "my password is hunter2 and then a lot more text than twenty"
    assert r.text(long) == "my password is ‹reda…"
    assert r.fields({"text": long, "word": "word"}) == {"text": "my password is ‹reda…", "word": "word"}
    assert Redaction().text(long) == "my password is ‹redacted: password› and then a lot more text than twenty"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What is the wifi password?", "password"),
        ("What's your GitHub token?", "token"),
        ("Please paste the API key", "API key"),
        ("What is your PIN?", "PIN"),
        ("Which passphrase protects the SSH key?", "password"),
        ("Paste your seed phrase, please", "seed phrase"),
        ("Can you send me one of your backup codes?", "recovery code"),
        ("Wie lautet das WLAN-Passwort?", "password"),
        ("Quel est le mot de passe ?", "password"),
        ("WiFi密码是多少？", "password"),
        ("What time should I book?", None),
        ("Which pass do you want, day or week?", None),
        ("What keyboard layout do you use?", None),
        ("How many tokens may the answer use?", None),
    ],
)
def test_a_question_that_asks_for_a_secret(question: str, kind: str | None) -> None:
    assert asks_for_secret(question) == kind


def test_an_answer_given_as_a_secret_is_hidden_wherever_it_is_met_again() -> None:
    """:func:`keep_out`: the answer itself, the same text quoted in a JSON row (the history's tool result, the
    checkpoint), its made-up words inside other texts (a tool call that passes it on, an answer that repeats it);
    a short answer only where it is the whole text. The step's cache of short texts forgets what it had kept of
    the answer, and only the newest answers are kept."""
    step = Redaction()
    answer = "Coral-Reef-61 is it"
    assert step.text(answer) == answer and step.fields({"note": answer}) == {"note": answer}  # cached as ordinary
    assert keep_out(f"  {answer}\n", "password") == PW
    assert redact_text(answer) == PW and step.text(answer) == PW and step.fields({"note": answer}) == {"note": PW}
    row = json.dumps({"role": "tool", "results": [{"call_id": "q1", "name": "ask_user", "content": answer}]})
    assert json.loads(redact_json(row))["results"] == [{"call_id": "q1", "name": "ask_user", "content": PW}]
    assert redact_value({"network": "home", "wifi": "Coral-Reef-61"}) == {"network": "home", "wifi": PW}
    assert redact_text("Joined with Coral-Reef-61.") == f"Joined with {PW}."

    assert keep_out("6042", "PIN") == R("PIN")
    assert redact_text("6042") == R("PIN") and redact_text("call 60421") == "call 60421"
    assert json.loads(redact_json('{"content":"6042","id":"call_6042"}')) == {"content": R("PIN"), "id": "call_6042"}

    for n in range(32):  # newer answers push the oldest out
        keep_out(f"zz-evicted-{n:04}", "password")
    assert redact_text(answer) == answer and redact_text("6042") == "6042"
