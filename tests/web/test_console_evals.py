"""The console's Evals pages: the runs ``bot eval`` recorded, each suite's pass rate over time, one run's cases per
model and the failing case's timeline; over HTTP (signed in, a viewer too) and in a real browser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path

import pytest
from playwright.async_api import async_playwright, expect

from agents.models.scripted import ScriptedModel
from bot.config.settings import Settings
from bot.evals.models import choose
from bot.evals.results import CheckResult, RunResult, TrialResult, TurnResult
from bot.evals.runner import EvalOptions, merged, run_suite
from bot.evals.store import save_run
from bot.evals.suite import parse_suite
from bot.gateway.app import Gateway
from bot.ids import fast_id
from tests.waiting import CEILING_S
from tests.web.browser import artifacts, need_chromium
from tests.web.harness import ADMIN_PASSWORD, VIEWER_PASSWORD, WEB_TOKEN, Browserless, base_url, hashes

pytestmark = pytest.mark.timeout(600)  # chromium may be installed first (about 2 minutes)
expect.set_options(timeout=CEILING_S * 1000)

SUITE = """
name: support
config: {routing: {strategy: rule}}
cases:
  - id: greets
    script: ["Hello!"]
    turns: [{user: "@chat hi", expect: {answer: Hello}}]
  - id: the-time
    script: [{call: get_current_time, args: {timezone: Asia/Tokyo}}, "It is late in Tokyo."]
    turns:
      - user: "@react what time is it in Tokyo?"
        expect: {tool: {name: get_current_time, args: {timezone: Europe/Paris}}}
"""


@pytest.fixture
async def console(make_settings: Callable[..., Settings], tmp_path: Path) -> AsyncIterator[tuple[Gateway, str, str]]:
    """A gateway with the web console on and two runs of a suite stored (the second with a failing case)."""
    admin, viewer = hashes()
    users = [
        {"name": "alice", "role": "admin", "password_hash": admin},
        {"name": "victor", "role": "viewer", "password_hash": viewer},
    ]
    settings = make_settings(
        channels={"console": {"enabled": False}},
        http={"enabled": True, "port": 0},
        web={"enabled": True, "token": WEB_TOKEN, "users": users},
    )
    gateway = Gateway(settings, model=ScriptedModel([]), channels=[])
    await gateway.start()
    try:

        def source(overrides: dict[str, object]) -> Settings:
            base = {"store": {"data_dir": str(tmp_path / "evals")}, "agents": {"dirs": []}}
            return make_settings(**merged(base, overrides))

        suite = parse_suite(SUITE)
        fixed = suite.model_copy(update={"cases": [suite.cases[0]]})
        options = EvalOptions(models=[choose("scripted")])
        first = await run_suite(fixed, source, options, tmp_path, gateway=Gateway)
        second = await run_suite(suite, source, options, tmp_path, gateway=Gateway)
        await save_run(gateway.repos.evals, first)
        await save_run(gateway.repos.evals, second)
        yield gateway, first.id, second.id
    finally:
        await gateway.stop(timeout=5)


async def test_the_evals_pages_over_http(console: tuple[Gateway, str, str]) -> None:
    gateway, passed, failed = console
    client = Browserless(gateway)
    try:
        assert (await client.get("/web/evals"))[0] == 303, "signed out: to the sign-in page"
        assert await client.login("victor", VIEWER_PASSWORD) == 303
        status, text, _ = await client.get("/web/evals")
        assert status == 200 and '<svg xmlns="http://www.w3.org/2000/svg" class="trend"' in text
        assert text.count("<circle") == 2 and "1/2 passed (50 %)</a>" in text and "<td>1/1 (100 %)</td>" in text
        assert f'href="/web/evals/{failed}"' in text and f'href="/web/evals/{passed}"' in text
        status, text, _ = await client.get(f"/web/evals/{failed}")
        assert status == 200 and "Eval support: 1/2 passed" in text
        assert "✗ the-time" in text and "✓ greets" in text
        assert "tool: expected get_current_time subset {&#34;timezone&#34;: &#34;Europe/Paris&#34;}" in text
        assert "Timeline of the failing trial" in text and "get_current_time" in text
        assert (await client.get("/web/evals/nosuchrun"))[0] == 404
    finally:
        await client.close()


async def test_the_evals_pages_in_a_browser(console: tuple[Gateway, str, str]) -> None:
    chromium = need_chromium()
    shots = artifacts("web-console-evals")
    gateway, _passed, failed = console
    root = base_url(gateway) + "/web"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            page.set_default_timeout(CEILING_S * 1000)
            await page.goto(root + "/evals")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password (or the admin token)").fill(ADMIN_PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Evals")).to_be_visible()
            await expect(page.locator("svg.trend circle")).to_have_count(2)
            await page.screenshot(path=shots / "01-evals.png", full_page=True)
            await page.get_by_role("link", name="1/2 passed (50 %)").click()
            await expect(page).to_have_url(f"{root}/evals/{failed}")
            failing = page.locator('.case[data-passed="no"]')
            await expect(failing).to_contain_text("the-time")
            await expect(failing.locator("ol.timeline li")).to_have_count(5)
            await expect(failing.locator("ol.timeline")).to_contain_text("get_current_time")
            await page.screenshot(path=shots / "02-eval-run.png", full_page=True)
            await page.get_by_role("link", name="Evals").click()
            await expect(page.get_by_role("heading", name="Evals")).to_be_visible()
        finally:
            await browser.close()


async def test_a_viewer_sees_an_eval_run_only_redacted(console: tuple[Gateway, str, str]) -> None:
    """A run stored before results were redacted (its row written as it was) is shown redacted all the same."""
    gateway, _passed, _failed = console
    password, key = "hunter2-Correct-Horse", "sk-live-9f8e7d6c5b4a39281706"
    said = f"user: my password is {password}, my key {key}"
    checks = [CheckResult(check="answer", expected="Done", passed=False, seen=f"Your password is {password}")]
    turn = TurnResult(index=1, action=said, answer=f"Your password is {password}", checks=checks)
    trial = TrialResult(case="leaky", model="scripted", turns=[turn])
    run_id = fast_id()
    run = RunResult(id=run_id, suite="leaky", started_at=datetime(2026, 1, 2), models=["scripted"], trials=[trial])
    line = (run_id, "leaky", "scripted", "failed", 1, 1, 0, 0.0, 0.0, datetime(2026, 1, 2))
    await gateway.repos.evals.add(line, run.model_dump_json())
    client = Browserless(gateway)
    try:
        assert await client.login("victor", VIEWER_PASSWORD) == 303
        status, text, _ = await client.get(f"/web/evals/{run_id}")
        assert status == 200 and "✗ leaky" in text and "‹redacted: " in text
        assert password not in text and key not in text
    finally:
        await client.close()
