"""The redaction step: what the detector ``remember`` refuses with recognises is replaced by ``‹redacted: kind›``
wherever a call is stored or shown; ordinary text, ids and numbers are left alone; JSON stays JSON; redacting
twice changes nothing."""

from __future__ import annotations

import json

import pytest

from bot.redaction import Redaction, find_secret, redact_json, redact_text, redact_value, secret_in


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
