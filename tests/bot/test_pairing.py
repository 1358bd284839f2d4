"""Pairing: a stranger who writes to the bot directly gets a one-time code, an admin lets them in with ``/pair
CODE`` at once (no restart), audited; codes expire, a sender has one, a channel a bounded number; ``/unpair``."""

from __future__ import annotations

import re
from typing import Any

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from bot.clock import FakeClock

CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4})\b")


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def start(make_harness: Any, model: Any = None, *, reply_every_s: float = 3600, **pairing: Any) -> Any:
    return await make_harness(
        model or ScriptedModel([]),
        allow=["u1"],
        admins=["admin"],
        clock=FakeClock(),
        channels={"console": {"unknown_senders": "pair"}},
        pairing={"code_minutes": 60, **pairing},
        limits={"unknown_sender_reply_s": reply_every_s},
    )


def code_in(texts: list[str]) -> str:
    found = CODE.search("\n".join(texts))
    assert found, texts
    return found.group(1)


async def _inbox_rows(h: Any) -> list[str]:
    await h.gateway.store.flush()
    return [str(key) for (key,) in await h.gateway.store.read("SELECT event_key FROM inbox")]


async def test_a_stranger_is_let_in_by_an_admins_pair_at_once_and_it_is_audited(make_harness: Any) -> None:
    h = await start(make_harness, ScriptedModel([echo]))
    stranger = h.chat("dm-u9")
    told = await h.say("hello?", user="u9", chat=stranger)
    code = code_in(told)
    assert "give an admin of this bot this code" in told[0] and "Your user id is u9" in told[0]
    assert await _inbox_rows(h) == [], "nothing of a stranger's message is stored"
    [waiting] = await h.gateway.pairing.store.waiting()
    assert (waiting.user_id, waiting.chat_key) == ("u9", str(stranger))

    assert await h.say(f"/pair {code}", user="u1") == ["/pair is for admins only; nothing was changed."]
    listing = await h.say("/pair", user="admin")
    assert code in listing[0] and "console user u9" in listing[0]
    approved = await h.say(f"/pair {code.lower()}", user="admin")
    assert approved[0].startswith("✅ Paired console user u9 (u9): they can talk to me now")
    assert "An admin let you in" in approved[1], "the person is told, in their chat"
    assert h.channel.sent[-1].chat == stranger

    assert await h.say("now?", user="u9", chat=stranger) == ["echo: now?"], "no restart needed"
    entry = (await h.gateway.runs.audit_log(1))[0]
    assert (entry["actor"], entry["scope"], entry["name"], entry["new"]) == ("admin", "pairing", "pair", "console:u9")
    assert await h.gateway.pairing.store.waiting() == [], "a code is used up"
    assert (await h.say(f"/pair {code}", user="admin"))[0].startswith("No pairing code")

    # Still in after a restart; /unpair lets them out, audited too.
    await h.restart(ScriptedModel([echo]))
    assert await h.say("still?", user="u9", chat=stranger) == ["echo: still?"]
    assert await h.say("/unpair u9", user="admin") == ["Unpaired console:u9: they are a stranger here again."]
    assert (await h.gateway.runs.audit_log(1))[0]["name"] == "unpair"
    rows = len(await _inbox_rows(h))
    again = await h.say("and now?", user="u9", chat=stranger)
    assert len(again) == 1 and code_in(again) != code, "a stranger again: a new code, no answer"
    assert len(await _inbox_rows(h)) == rows, "nothing stored"
    assert await h.say("/unpair u9", user="admin") == ["console:u9 was not paired; /pair lists who was."]
    assert "allow_from or admins" in (await h.say("/unpair console:u1", user="admin"))[0]


async def test_one_code_per_sender_until_it_expires(make_harness: Any) -> None:
    h = await start(make_harness, reply_every_s=0)  # answered every time, to see which code each answer names
    clock, dm = h.gateway.clock, h.chat("dm-u9")
    first = code_in(await h.say("hi", user="u9", chat=dm))
    await clock.advance(30 * 60)
    assert code_in(await h.say("hi again", user="u9", chat=dm)) == first, "asked again: the same code"
    assert len(await h.gateway.pairing.store.waiting()) == 1
    await clock.advance(31 * 60)
    assert (await h.say(f"/pair {first}", user="admin"))[0].startswith("No pairing code"), "expired: refused"
    second = code_in(await h.say("hi", user="u9", chat=dm))
    assert second != first, "after it expired, a new one"
    assert (await h.say(f"/pair {second}", user="admin"))[0].startswith("✅ Paired console user u9")


async def test_a_channel_has_a_bounded_number_of_codes_waiting(make_harness: Any) -> None:
    h = await start(make_harness, max_pending=2)
    for user in ("s1", "s2"):
        code_in(await h.say("hi", user=user, chat=h.chat(f"dm-{user}")))
    [full] = await h.say("hi", user="s3", chat=h.chat("dm-s3"))
    assert "too many people are waiting" in full and "Your user id is s3" in full and not CODE.search(full)
    assert len(await h.gateway.pairing.store.waiting()) == 2


async def test_in_a_group_a_stranger_is_told_to_write_directly(make_harness: Any) -> None:
    h = await start(make_harness)
    [told] = await h.say("@bot hi", user="u9", chat=h.chat("group"), is_direct=False, mentions_bot=True)
    assert "write to me directly" in told and not CODE.search(told)
    assert await h.gateway.pairing.store.waiting() == []


async def test_reply_and_ignore_keep_their_meaning(make_harness: Any) -> None:
    h = await make_harness(ScriptedModel([]), allow=["u1"], channels={"console": {"unknown_senders": "reply"}})
    [told] = await h.say("hi", user="u9")
    assert "Your user id is u9" in told and "allow_from" in told and not CODE.search(told)


def test_codes_use_every_symbol_of_their_alphabet_uniformly() -> None:
    """Pairing and link codes: 8 symbols of 32, each equally likely (40 bits), not 24 of them (36 bits)."""
    from collections import Counter

    from bot.ids import CODE_ALPHABET
    from bot.store.sql.repos.pairing import new_code

    assert len(set(CODE_ALPHABET)) == 32
    counts = Counter("".join(new_code() for _ in range(2_000)))
    assert set(counts) == set(CODE_ALPHABET)
    # 16,000 symbols: 500 expected each; a symbol drawn twice as often (the old modulo bias) would exceed 800.
    assert max(counts.values()) < 700 and min(counts.values()) > 300
