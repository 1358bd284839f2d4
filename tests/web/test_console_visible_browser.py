"""The console in a real browser (Playwright + Debian's chromium): a call whose argument hides text behind bidi and
zero-width characters shows the same escapes in the console card as in the Telegram prompt (and its edit box holds
JSON that parses back to the same argument); an inbox left open through a restart of the gateway shows a request
raised while its live stream was reconnecting, within 5 s and without a reload."""

from __future__ import annotations

import json
import socket
import time

import pytest
from playwright.async_api import async_playwright, expect

from agents.models.scripted import ScriptedModel, call
from tests.helpers.telegram import BOB
from tests.waiting import CEILING_S
from tests.web.browser import artifacts, need_chromium
from tests.web.harness import ADMIN_PASSWORD, WebEnv, base_url

pytestmark = pytest.mark.timeout(600)  # chromium may be installed first (about 2 minutes)

expect.set_options(timeout=CEILING_S * 1000)

TRICK = "report.txt \u202egnp.exe\u202c and\u200bhidden"
SHOWN = "report.txt \\u202egnp.exe\\u202c and\\u200bhidden"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_hidden_characters_show_and_the_inbox_survives_a_restart(env: WebEnv) -> None:
    chromium = need_chromium()
    shots = artifacts("web-console-visible")
    settings = env.configure_web()
    env.settings = settings.model_copy(update={"http": settings.http.model_copy(update={"port": free_port()})})
    first = await env.start(ScriptedModel([call("delete_cache", {"path": TRICK}, id="c1"), "Left it alone."]))
    root = base_url(first) + "/web"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            page.set_default_timeout(CEILING_S * 1000)
            await page.goto(root + "/login")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password (or the admin token)").fill(ADMIN_PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#inbox-empty")).to_be_visible()

            # 1. What hides text in the chat prompt's arguments is escaped the same way in the console card.
            env.fake.push(env.fake.message("@react delete the report"))
            ref, _buttons = await env.prompt()
            chat, message_id = ref.split(":")
            telegram_text = env.fake.messages[(int(chat), int(message_id))]["text"]
            assert SHOWN in telegram_text, telegram_text
            card = page.locator("article.pending")
            await expect(card).to_have_count(1)
            await expect(card.locator("pre.args")).to_contain_text(f'"path": "{SHOWN}"')
            shown = await card.locator("pre.args").inner_text()
            assert "\u202e" not in shown and "\u200b" not in shown
            edit = await card.locator("textarea[name^='args:']").input_value()
            assert json.loads(edit) == {"path": TRICK}, "the edit box still holds the very same argument"
            await page.screenshot(path=shots / "01-escaped.png", full_page=True)
            await card.get_by_role("button", name="❌ Deny").click()
            await expect(page.locator(".flash.ok")).to_contain_text("Answered")
            await env.reply("Left it alone.")
            await expect(page.locator("article.pending")).to_have_count(0)

            # 2. Restart with the inbox open: the stream is held off until a request was raised meanwhile.
            await page.route("**/events", lambda route: route.abort())
            await env.stop(first)
            second = await env.start(ScriptedModel([call("delete_cache", {"path": "/tmp/after"}, id="c2")]))
            assert base_url(second) + "/web" == root, "the same address after the restart"
            env.fake.push(env.fake.message("@react delete the other cache", chat_id=BOB, user_id=BOB, name="Bob"))
            await env.prompt(BOB)
            await page.screenshot(path=shots / "02-reconnecting.png", full_page=True)
            began = time.monotonic()
            await page.unroute("**/events")
            await expect(page.locator("article.pending")).to_have_count(1, timeout=5000)
            assert time.monotonic() - began < 5
            await expect(page.locator("article.pending")).to_contain_text("/tmp/after")
            await expect(page.locator("#pending-count")).to_have_text("1")
            await page.screenshot(path=shots / "03-after-restart.png", full_page=True)
        finally:
            await browser.close()
