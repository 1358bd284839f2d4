"""The console in a real browser (Playwright + Debian's chromium): sign in, a confirmation raised in a loopback
Telegram chat appears live, is approved in the browser (the Telegram prompt is edited, the tool runs once);
edited arguments are refused until they fit, then run and are shown in the chat; a press in Telegram first makes
the browser's answer refused; CSRF and signed-out requests are refused; every page is screenshotted."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, async_playwright, expect

from agents.models.scripted import ScriptedModel, call
from tests.helpers.telegram import ALICE, approve
from tests.waiting import CEILING_S
from tests.web.browser import artifacts, need_chromium
from tests.web.harness import ADMIN_PASSWORD, WebEnv, base_url

pytestmark = pytest.mark.timeout(600)  # chromium may be installed first (about 2 minutes)

# Ceilings, not budgets: a busy machine renders slowly (Playwright's own default is 5 s per assertion).
expect.set_options(timeout=CEILING_S * 1000)


async def pending_card(page: Page, env: WebEnv) -> str:
    """Wait for the one pending request to appear on the open inbox (live, no reload); its card's selector."""
    card = page.locator("article.pending")
    await expect(card).to_have_count(1)
    rows = await env.running[-1].runs.all_pending()
    assert len(rows) == 1
    return f"#i-{rows[0].id}"


async def test_the_console_in_a_browser(env: WebEnv) -> None:
    chromium = need_chromium()
    shots = artifacts("web-console")
    model = ScriptedModel(
        [
            call("delete_cache", {"path": "/tmp/build"}, id="c1"),
            "Deleted /tmp/build.",
            call("delete_cache", {"path": "/tmp/build"}, id="c2"),
            "Deleted the old cache.",
            call("delete_cache", {"path": "/tmp/three"}, id="c3"),
            "Deleted three.",
        ]
    )
    gateway = await env.start(model)
    root = base_url(gateway) + "/web"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            page.set_default_timeout(CEILING_S * 1000)
            # Signed out: every page leads to the sign-in form.
            await page.goto(root + "/health")
            await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
            await page.screenshot(path=shots / "01-login.png", full_page=True)
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password (or the admin token)").fill(ADMIN_PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Health: ok")).to_be_visible()  # back where it was going
            await page.goto(root + "/")
            await expect(page.locator("#inbox-empty")).to_be_visible()

            # 1. A confirmation from Telegram appears live; approved in the browser.
            env.fake.push(env.fake.message("@react delete the build cache"))
            ref1, buttons1 = await env.prompt()
            card = await pending_card(page, env)
            await expect(page.locator(card)).to_contain_text("/tmp/build")
            await expect(page.locator(card)).to_contain_text(f"telegram:{ALICE}")
            await expect(page.locator("#pending-count")).to_have_text("1")
            await page.screenshot(path=shots / "02-inbox-pending.png", full_page=True)
            await page.locator(card).get_by_role("button", name="✅ Approve").click()
            await expect(page.locator(".flash.ok")).to_contain_text("Answered")
            await env.reply("Deleted /tmp/build.")
            assert env.runs == ["/tmp/build"]
            assert any("Approved by alice (web)" in t for t in env.edited_texts())
            env.fake.push(env.fake.press(ref1, approve(buttons1)))  # the old Telegram button does nothing now
            await gateway.settled()
            assert env.runs == ["/tmp/build"]

            # 2. Edit arguments: refused until they fit the tool, then what runs is shown in the chat.
            env.fake.push(env.fake.message("@react delete the build cache again"))
            await env.prompt()
            card = await pending_card(page, env)
            await page.locator(card).locator("details.edit summary").click()
            box = page.locator(card).locator("textarea[name^='args:']")
            await box.fill('{"path": 42}')
            await page.screenshot(path=shots / "03-edit-arguments.png", full_page=True)
            await page.locator(card).get_by_role("button", name="Approve with these arguments").click()
            await expect(page.locator(".flash.bad")).to_contain_text("invalid arguments for delete_cache")
            assert env.runs == ["/tmp/build"]
            card = await pending_card(page, env)
            await page.locator(card).locator("details.edit summary").click()
            await page.locator(card).locator("textarea[name^='args:']").fill('{"path": "/tmp/build/old"}')
            await page.locator(card).get_by_role("button", name="Approve with these arguments").click()
            await expect(page.locator(".flash.ok")).to_contain_text("Answered")
            await env.reply("Deleted the old cache.")
            assert env.runs == ["/tmp/build", "/tmp/build/old"]
            assert any('delete_cache(path="/tmp/build/old")' in t for t in env.edited_texts())

            # 3. Pressed in Telegram first: the browser's answer is refused, the tool ran once.  (The card is
            # stale: the live inbox would remove it, so its refresh is held back meanwhile.)
            env.fake.push(env.fake.message("@react delete three"))
            ref3, buttons3 = await env.prompt()
            card = await pending_card(page, env)
            await page.route("**/inbox/items", lambda route: route.abort())
            env.fake.push(env.fake.press(ref3, approve(buttons3)))
            await env.reply("Deleted three.")
            await page.locator(card).get_by_role("button", name="❌ Deny").click()
            await page.unroute("**/inbox/items")
            await expect(page.locator(".flash.bad")).to_contain_text(f"already answered by {ALICE} in telegram")
            await page.screenshot(path=shots / "04-refused.png", full_page=True)
            assert env.runs == ["/tmp/build", "/tmp/build/old", "/tmp/three"]

            # CSRF: a POST without the page's token is refused, from this very signed-in browser.
            status = await page.evaluate(
                """async (url) => (await fetch(url, {method: "POST", body: new URLSearchParams({strategy: "llm",
                   scope: "*"})})).status""",
                root + "/routing/strategy",
            )
            assert status == 403
            assert (await gateway.store.chat_settings("*")).get("strategy") is None

            # Every page, for the record.
            await page.goto(root + "/chats")
            await expect(page.get_by_role("link", name=f"telegram:{ALICE}")).to_be_visible()
            await page.screenshot(path=shots / "05-chats.png", full_page=True)
            await page.get_by_role("link", name=f"telegram:{ALICE}").click()
            await expect(page.locator(".msg.user").first).to_contain_text("delete the build cache")
            await page.screenshot(path=shots / "06-chat.png", full_page=True)
            await page.get_by_role("link", name="timeline").first.click()
            await expect(page.locator(".timeline li").first).to_be_visible()
            await page.screenshot(path=shots / "07-run-timeline.png", full_page=True)
            await page.goto(root + "/routing")
            await page.get_by_label("Message").fill("@plan organise a trip")
            await page.get_by_role("button", name="Dry run").click()
            await expect(page.locator("#decision")).to_contain_text("→ plan")
            await page.locator("input[name=scope]").fill(f"telegram:{ALICE}")
            await page.locator("select[name=strategy]").select_option("llm")
            await page.get_by_role("button", name="Switch").click()
            await expect(page.locator(".flash.ok")).to_contain_text(f"for telegram:{ALICE}: llm")
            await page.screenshot(path=shots / "08-routing.png", full_page=True)
            await page.goto(root + "/agents")
            await expect(page.locator("#agent-react")).to_contain_text("delete_cache")
            await page.screenshot(path=shots / "09-agents.png", full_page=True)
            await page.goto(root + "/health")
            await expect(page.get_by_role("heading", name="Channels")).to_be_visible()
            await page.screenshot(path=shots / "10-health.png", full_page=True)

            # A phone's screen: nothing wider than it.
            phone = await browser.new_page(viewport={"width": 390, "height": 844})
            await phone.context.add_cookies(await page.context.cookies())
            await phone.goto(root + "/routing")
            wide = await phone.evaluate("document.documentElement.scrollWidth")
            assert wide <= 390, wide
            await phone.screenshot(path=shots / "11-phone-routing.png", full_page=True)

            # Signed out, the browser sees nothing but the sign-in page.
            await page.get_by_role("button", name="Sign out").click()
            await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
            await page.goto(root + "/chats")
            await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        finally:
            await browser.close()
    model.assert_complete()
    assert {p.name for p in shots.iterdir()} >= {"01-login.png", "02-inbox-pending.png", "10-health.png"}
