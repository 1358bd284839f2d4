"""The Chat page in a real browser (Playwright + Debian's chromium) against a real gateway whose only channel is
``web``: signed out it is the sign-in page; a message gets an answer that visibly grows (a partial render is seen
before the final one, polled); a risky tool is approved with its button and its result shown; a file goes up and
the bot says what it got; a file the bot sends is downloaded; a reload shows the chat again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from playwright.async_api import async_playwright, expect

from agents.models.base import ModelRequest
from agents.models.scripted import ScriptedModel, Streamed, call
from bot.config.settings import Settings
from tests.helpers.web_chat import ChatEnv
from tests.waiting import CEILING_S
from tests.web.browser import artifacts, need_chromium
from tests.web.harness import ADMIN_PASSWORD, base_url

pytestmark = pytest.mark.timeout(600)  # chromium may be installed first (about 2 minutes)

expect.set_options(timeout=CEILING_S * 1000)  # a ceiling, not a budget


@pytest.fixture
async def env(make_settings: Callable[..., Settings]) -> AsyncIterator[ChatEnv]:
    made = ChatEnv(make_settings)
    try:
        yield made
    finally:
        for gateway in list(made.running):
            await made.stop(gateway)


async def test_chatting_in_the_browser(env: ChatEnv, tmp_path: Path) -> None:
    chromium = need_chromium()
    shots = artifacts("web-chat")
    partial_seen = asyncio.Event()

    async def after_the_first_piece_is_on_screen(k: int) -> None:
        await asyncio.wait_for(partial_seen.wait(), CEILING_S)

    def acknowledge(request: ModelRequest) -> str:
        media = request.messages[-1].media
        return f"Got {media[0].name}, {media[0].size} bytes." if media else "No file came."

    model = ScriptedModel(
        [
            Streamed(("Hello ", "from ", "the bot."), gate=after_the_first_piece_is_on_screen),
            call("delete_cache", {"path": "/tmp/build"}),
            "Deleted /tmp/build.",
            acknowledge,
            call("send_file", {"path": "report.txt"}),
            "Here is the report.",
        ]
    )
    gateway = await env.start(model)
    (env.workspace() / "report.txt").write_text("quarterly numbers\n")
    root = base_url(gateway) + "/web"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            page.set_default_timeout(CEILING_S * 1000)
            # Signed out: the Chat page is the sign-in form, then the chat.
            await page.goto(root + "/talk")
            await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password (or the admin token)").fill(ADMIN_PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#talk[data-synced]")).to_be_visible()
            await expect(page.get_by_role("link", name="Chat", exact=True)).to_have_class("here")

            # 1. A message, and an answer that grows on the screen.
            await page.get_by_label("Message").fill("hi there")
            await page.get_by_role("button", name="Send").click()
            await expect(page.locator(".msg.user").last).to_have_text("hi there")
            growing = page.locator(".msg.bot.draft")
            await expect(growing).to_contain_text("Hello")
            assert "the bot." not in (await growing.inner_text())  # a partial render, before the final one
            await page.screenshot(path=shots / "01-streaming.png", full_page=True)
            partial_seen.set()
            await expect(page.locator(".msg.bot:not(.draft)").last).to_have_text("Hello from the bot.")
            await expect(page.locator(".msg.bot.draft")).to_have_count(0)

            # 2. A risky tool: approved with its button, its result shown.
            await page.get_by_label("Message").fill("@react delete the build cache")
            await page.get_by_label("Message").press("Enter")
            await expect(page.get_by_role("button", name="✅ Approve")).to_be_visible()
            await page.screenshot(path=shots / "02-approval.png", full_page=True)
            assert env.ran == []
            await page.get_by_role("button", name="✅ Approve").click()
            await expect(page.locator(".msg.bot").last).to_have_text("Deleted /tmp/build.")
            await expect(page.get_by_role("button", name="✅ Approve")).to_have_count(0)
            assert env.ran == ["/tmp/build"]

            # 3. A file up: the bot says what it got.
            notes = tmp_path / "notes.txt"
            notes.write_text("remember the milk\n")
            await page.locator("#talk-file").set_input_files(notes)
            await page.get_by_label("Message").fill("my notes")
            await page.get_by_role("button", name="Send").click()
            await expect(page.locator(".msg.bot").last).to_have_text("Got notes.txt, 18 bytes.")
            await expect(page.locator(".msg.user").last.get_by_role("link", name="📎 notes.txt")).to_be_visible()

            # 4. A file down: the bot sends the report (after its confirmation); the browser downloads it.
            await page.get_by_label("Message").fill("@react send me the report")
            await page.get_by_role("button", name="Send").click()
            await page.get_by_role("button", name="✅ Approve").click()
            link = page.get_by_role("link", name="📎 report.txt")
            await expect(link).to_be_visible()
            async with page.expect_download() as download_info:
                await link.click()
            download = await download_info.value
            saved = tmp_path / "downloaded.txt"
            await download.save_as(saved)
            assert saved.read_text() == "quarterly numbers\n"
            assert download.suggested_filename == "report.txt"
            await expect(page.locator(".msg.bot").last).to_have_text("Here is the report.")
            await page.screenshot(path=shots / "03-files.png", full_page=True)

            # 5. A reload shows the chat again.
            await page.reload()
            await expect(page.locator("#talk[data-synced]")).to_be_visible()
            await expect(page.locator(".msg.user").first).to_have_text("hi there")
            await expect(page.locator(".msg.bot").last).to_have_text("Here is the report.")
        finally:
            await browser.close()
    model.assert_complete()
