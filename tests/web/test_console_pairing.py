"""Pairing in the web console's inbox: a stranger who wrote to the Telegram bot is listed beside the approvals; an
admin lets them in there (audited as ``web:<name>``), a viewer cannot."""

from __future__ import annotations

import re
from collections.abc import Callable

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel
from tests.web.harness import VIEWER_PASSWORD, Browserless, WebEnv

CAROL = 333
CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4})-([A-HJ-NP-Z2-9]{4})\b")


def echo(request: ModelRequest) -> str:
    return "echo: " + (request.messages[-1].text or "")


async def test_a_stranger_is_let_in_from_the_console_inbox(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    gateway = await env.start(ScriptedModel([echo]))
    env.fake.push(env.fake.message("hello?", chat_id=CAROL, user_id=CAROL, name="Carol"))
    offer = await env.reply("give an admin of this bot this code", chat_id=CAROL)
    found = CODE.search(offer["text"])
    assert found is not None
    code = found.group(1) + found.group(2)

    viewer = client_for(gateway)
    assert await viewer.login("victor", VIEWER_PASSWORD) == 303
    _status, page, _r = await viewer.get("/web/")
    assert f"telegram user {CAROL} (Carol)" in page and f"{found.group(1)}-{found.group(2)}" in page
    assert "Let them in" not in page, "a viewer sees, and cannot act"
    status, _text, _r = await viewer.post(f"/web/pairing/{code}", {})
    assert status == 403

    admin = client_for(gateway)
    assert await admin.login() == 303
    status, page, _r = await admin.post(f"/web/pairing/{code}", {})
    assert status == 200 and f"Paired telegram user {CAROL} (Carol)" in page
    await env.reply("An admin let you in", chat_id=CAROL)
    env.fake.push(env.fake.message("thanks", chat_id=CAROL, user_id=CAROL, name="Carol"))
    await env.reply("echo: thanks", chat_id=CAROL)
    entry = (await gateway.runs.audit_log(1))[0]
    assert (entry["actor"], entry["name"], entry["new"]) == ("web:alice", "pair", f"telegram:{CAROL}")
    _status, page, _r = await admin.get("/web/")
    assert "Waiting to be let in" not in page
