"""The console's side by side views of eval runs: a two-model run's case × model grid (regressions and
improvements against the first model marked), a case of two models side by side (both answers, the tool calls, the
first differing step highlighted), and run vs run; over HTTP (signed in, escaped, redacted) and in a real browser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from urllib.parse import quote

import pytest
from playwright.async_api import async_playwright, expect

from agents.models.scripted import ScriptedModel
from bot.config.settings import Settings
from bot.evals.results import CheckResult, RunResult, ToolSeen, TrialResult, TurnResult
from bot.evals.store import save_run
from bot.gateway.app import Gateway
from bot.ids import fast_id
from tests.waiting import CEILING_S
from tests.web.browser import artifacts, need_chromium
from tests.web.harness import ADMIN_PASSWORD, VIEWER_PASSWORD, WEB_TOKEN, Browserless, base_url, hashes

pytestmark = pytest.mark.timeout(600)  # chromium may be installed first (about 2 minutes)
expect.set_options(timeout=CEILING_S * 1000)


TIME = "user: @react what time is it in Tokyo?"
TOOL = "get_current_time"


def _trial(case: str, model: str, action: str, answer: str, *, tz: str | None = None, held: bool = True) -> TrialResult:
    tools = [ToolSeen(name=TOOL, args={"timezone": tz})] if tz else []
    check = CheckResult(check="answer", expected="the fact", passed=held, seen=answer)
    turn = TurnResult(
        index=1,
        action=action,
        agent="react" if tools else "chat",
        tools=tools,
        answer=answer,
        status="done",
        checks=[check],
        model_calls=len(tools) + 1,
        latency_ms=120.0,
    )
    return TrialResult(case=case, model=model, passed=held, turns=[turn])


def _run(models: list[str], trials: list[TrialResult], started: datetime) -> RunResult:
    return RunResult(id=fast_id(), suite="support", started_at=started, models=models, trials=trials)


@pytest.fixture
async def stored(make_settings: Callable[..., Settings]) -> AsyncIterator[tuple[Gateway, str, str]]:
    """A console with two runs of a suite stored: model-b alone, then model-a and model-b side by side (model-b
    now sends the wrong time zone, and passes the case it failed)."""
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
        hi, done = "user: @chat hi", "user: @chat say done"
        a = [
            _trial("greets", "model-a", hi, "Hello!"),
            _trial("the-time", "model-a", TIME, "It is late in Tokyo.", tz="Asia/Tokyo"),
            _trial("fixed", "model-a", done, "not yet", held=False),
        ]
        b = [
            _trial("greets", "model-b", hi, "Hello there!"),
            _trial("the-time", "model-b", TIME, "It is late in Paris.", tz="Europe/Paris", held=False),
            _trial("fixed", "model-b", done, "done"),
        ]
        now = datetime(2026, 3, 1, 12, 0)
        earlier = _run(["model-b"], [t.model_copy(update={"model": "model-b"}) for t in a], now - timedelta(hours=1))
        both = _run(["model-a", "model-b"], a + b, now)
        await save_run(gateway.repos.evals, earlier)
        await save_run(gateway.repos.evals, both)
        yield gateway, earlier.id, both.id
    finally:
        await gateway.stop(timeout=5)


def side(run_id: str, case: str) -> str:
    return f"/web/evals/{run_id}/side?case={quote(case)}&left=model-a&right=model-b"


async def test_side_by_side_over_http(stored: tuple[Gateway, str, str]) -> None:
    gateway, earlier, both = stored
    client = Browserless(gateway)
    try:
        for path in (side(both, "the-time"), f"/web/evals/{both}/vs?run={earlier}"):
            assert (await client.get(path))[0] == 303, "signed out: to the sign-in page"
        assert await client.login("victor", VIEWER_PASSWORD) == 303
        status, text, _ = await client.get(f"/web/evals/{both}")
        assert status == 200 and "Case × model" in text and text.count('class="mark regression"') == 1
        assert (
            text.count('class="mark improvement"') == 1
            and f'href="{side(both, "the-time").replace("&", "&amp;")}"' in text
        )
        assert f'<option value="{earlier}">' in text
        status, text, _ = await client.get(side(both, "the-time"))
        assert status == 200 and "It is late in Tokyo." in text and "It is late in Paris." in text
        assert "First difference</strong> · turn 1 (user: @react what time is it in Tokyo?): tool calls:" in text
        assert "get_current_time(timezone=&#34;Europe/Paris&#34;)" in text
        status, text, _ = await client.get(f"/web/evals/{both}/vs?run={earlier}")
        assert status == 200 and "Regressions (1)" in text and "Improvements (1)" in text
        assert "the-time [model-b]</a>: passed → failed" in text
        for missing in (
            side(both, "no-such-case"),
            f"/web/evals/{both}/side?case=greets&left=model-a&right=model-a",
            f"/web/evals/{both}/vs?run=nosuchrun",
            f"/web/evals/{both}/vs?run={earlier}&case=greets&model=model-c",
        ):
            assert (await client.get(missing))[0] == 404, missing
    finally:
        await client.close()


async def test_a_side_by_side_is_escaped_and_redacted(stored: tuple[Gateway, str, str]) -> None:
    """A run stored before results were redacted (its row written as it was) is compared redacted all the same."""
    gateway, _earlier, _both = stored
    key = "sk-live-9f8e7d6c5b4a39281706"
    said = "<img src=x onerror=alert(1)>"
    turns = [
        TurnResult(index=1, action="user: hi", agent="chat", answer="Hello"),
        TurnResult(
            index=1,
            action="user: hi",
            agent="chat",
            answer=f"{said} your key is {key}",
            checks=[CheckResult(check="answer", expected="Hello", passed=False, seen=said)],
        ),
    ]
    trials = [TrialResult(case="leaky", model=m, passed=m == "a", turns=[t]) for m, t in zip("ab", turns, strict=True)]
    run_id = fast_id()
    run = RunResult(id=run_id, suite="leaky", started_at=datetime(2026, 1, 2), models=["a", "b"], trials=trials)
    await gateway.repos.evals.add(
        (run_id, "leaky", "a, b", "failed", 1, 2, 1, 0.5, 0.0, run.started_at), run.model_dump_json()
    )
    client = Browserless(gateway)
    try:
        assert await client.login("victor", VIEWER_PASSWORD) == 303
        status, text, _ = await client.get(f"/web/evals/{run_id}/side?case=leaky&left=a&right=b")
        assert status == 200 and "‹redacted: " in text and key not in text
        assert said not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    finally:
        await client.close()


async def test_side_by_side_in_a_browser(stored: tuple[Gateway, str, str]) -> None:
    chromium = need_chromium()
    shots = artifacts("web-console-compare")
    gateway, earlier, both = stored
    root = base_url(gateway) + "/web"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            page.set_default_timeout(CEILING_S * 1000)
            await page.goto(f"{root}/evals/{both}")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password (or the admin token)").fill(ADMIN_PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            # The grid: a cell per case and model, model-b's marked against model-a.
            grid = page.locator("table.grid")
            await expect(grid.locator("td.cell")).to_have_count(6)
            cell = grid.locator('tr[data-case="the-time"] td[data-model="model-b"]')
            await expect(cell).to_contain_text("✗")
            await expect(cell.locator(".mark.regression")).to_have_text("▼ regression")
            await expect(grid.locator('tr[data-case="fixed"] td[data-model="model-b"] .mark')).to_have_text(
                "▲ improvement"
            )
            await page.screenshot(path=shots / "01-grid.png", full_page=True)
            # A cell opens the case side by side: both answers, the first differing step marked.
            await cell.get_by_role("link").click()
            await expect(page.get_by_role("heading", name="the-time: model-a vs model-b")).to_be_visible()
            pair = page.locator("section.pair")
            await expect(pair.locator("pre.answer")).to_have_text(["It is late in Tokyo.", "It is late in Paris."])
            await expect(pair.locator(".first-difference")).to_contain_text("tool calls")
            first = pair.locator("tr.first")
            await expect(first).to_have_attribute("data-field", "tools")
            await expect(first).to_contain_text('get_current_time(timezone="Asia/Tokyo")')
            await expect(first).to_contain_text('get_current_time(timezone="Europe/Paris")')
            await expect(first).to_contain_text("◀ first difference")
            await page.screenshot(path=shots / "02-side-by-side.png", full_page=True)
            # Run vs run: pick the earlier run; the regression is listed and opens its side by side.
            await page.get_by_role("link", name="back").click()
            await page.get_by_label("Run vs run").select_option(earlier)
            await page.get_by_role("button", name="Compare").click()
            regressions = page.locator('ul.versus[data-change="regression"] li')
            await expect(regressions).to_have_count(1)
            await expect(regressions).to_contain_text("▼ regression")
            await expect(regressions).to_contain_text("the-time [model-b]: passed → failed")
            await page.screenshot(path=shots / "03-run-vs-run.png", full_page=True)
            await regressions.get_by_role("link", name="the-time [model-b]").click()
            await expect(
                page.get_by_role("heading", name=f"the-time [model-b]: run {earlier[-8:]} vs run {both[-8:]}")
            ).to_be_visible()
            await expect(page.locator("section.pair pre.answer")).to_have_text(
                ["It is late in Tokyo.", "It is late in Paris."]
            )
            await expect(page.locator("section.pair tr.first")).to_have_attribute("data-field", "tools")
            await page.screenshot(path=shots / "04-run-vs-run-side.png", full_page=True)
        finally:
            await browser.close()
