"""Who may use the console: nothing served signed out, sign-in and its CSRF, the session cookie, the admin token,
sessions across a restart, the sign-in rate limit, the viewer role, password hashes and the config checks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agents.models.scripted import ScriptedModel, call
from bot.config.settings import Settings, load_settings
from bot.errors import ConfigError
from bot.web.auth import LoginLimiter, hash_password, verify_password
from tests.helpers.telegram import approve
from tests.web.harness import VIEWER_PASSWORD, WEB_TOKEN, Browserless, WebEnv, base_url, pending_id


async def test_nothing_is_served_without_signing_in(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    for path in ("/web/", "/web/chats", "/web/routing", "/web/agents", "/web/health", "/web/runs/abc"):
        status, text, response = await web.get(path)
        assert status == 303 and response.headers["Location"].startswith("/web/login?next="), path
        assert "Inbox" not in text
    for path in ("/web/inbox/items", "/web/events", "/web/static/console.js"):
        assert (await web.get(path))[0] == 401, path
    for path in ("/web/inbox/abc123", "/web/routing/strategy", "/web/routing/dry-run", "/web/logout"):
        assert (await web.post(path, {"choice": "a"}))[0] == 401, path
    assert (await web.get("/healthz"))[0] == 200
    status, text, response = await web.get("/web/login")
    assert status == 200 and "Sign in" in text
    assert (
        response.headers["X-Frame-Options"] == "DENY"
        and "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    )
    # A forged session cookie is nobody.
    web.session.cookie_jar.update_cookies({"bot_session": "forged"})
    assert (await web.get("/web/"))[0] == 303


async def test_sign_in_session_cookie_csrf_and_sign_out(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    await web.get("/web/login")
    # The sign-in form itself is protected: no token, or another's, is refused.
    status, _text, _r = await web.post("/web/login", {"name": "alice", "password": "x", "csrf": "forged"}, csrf=False)
    assert status == 403
    assert await web.login("alice", "wrong password") == 401
    assert await web.login("alice") == 303
    cookie = next(c for c in web.session.cookie_jar if c.key == "bot_session")
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/web"
    assert not cookie["secure"]  # plain http on loopback; https (or X-Forwarded-Proto with trust_proxy) sets it
    status, text, _r = await web.get("/web/")
    assert status == 200 and "alice (admin)" in text
    # The cookie's token is not what the store keeps.
    rows = await gateway.store.read("SELECT id, user_name FROM web_sessions")
    assert [r[1] for r in rows] == ["alice"] and cookie.value not in {r[0] for r in rows}
    # Every POST needs the page's CSRF token, and a foreign Origin is refused even with it.
    assert (await web.post("/web/routing/strategy", {"scope": "*", "strategy": "llm"}, csrf=False))[0] == 403
    status, _text, _r = await web.post(
        "/web/routing/strategy", {"scope": "*", "strategy": "llm"}, headers={"Origin": "https://evil.example"}
    )
    assert status == 403
    assert (await gateway.store.chat_settings("*")).get("strategy") is None
    audit = await gateway.runs.audit_log()
    assert any(a["name"] == "web.refused" and a["actor"] == "web:alice" for a in audit)
    assert any(a["name"] == "web.login" and a["new"] == "refused" and a["actor"] == "web:alice" for a in audit)
    assert (await web.post("/web/logout", {}))[0] == 303
    assert (await web.get("/web/"))[0] == 303
    assert await gateway.store.read("SELECT id FROM web_sessions") == []


async def test_the_admin_token_signs_in_and_sessions_survive_a_restart(
    env: WebEnv, client_for: Callable[..., Browserless]
) -> None:
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    await web.get("/web/login")
    status, _text, _r = await web.post("/web/login", {"name": "", "password": WEB_TOKEN})
    assert status == 303
    assert "token (admin)" in (await web.get("/web/"))[1]
    await env.stop(gateway)
    gateway = await env.start(ScriptedModel([]))
    web.base = base_url(gateway)
    status, text, _r = await web.get("/web/")
    assert status == 200 and "token (admin)" in text


async def test_sign_in_is_rate_limited(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    gateway = await env.start(ScriptedModel([]))
    web = client_for(gateway)
    for _ in range(5):
        assert await web.login("alice", "guess") == 401
    await web.get("/web/login")
    status, text, response = await web.post("/web/login", {"name": "alice", "password": "correct horse battery"})
    assert status == 429 and "Too many failed sign-ins" in text and int(response.headers["Retry-After"]) > 0
    clock = [0.0]
    limiter = LoginLimiter(2, 60, clock=lambda: clock[0])
    limiter.failed("ip:a")
    limiter.failed("ip:a")
    assert limiter.retry_after("ip:a", "name:x") == 60
    clock[0] = 61
    assert limiter.retry_after("ip:a") == 0


async def test_a_viewer_looks_but_cannot_act(env: WebEnv, client_for: Callable[..., Browserless]) -> None:
    model = ScriptedModel([call("delete_cache", {"path": "/tmp/build"}), "Deleted."])
    gateway = await env.start(model)
    env.fake.push(env.fake.message("@react delete the build cache"))
    ref, buttons = await env.prompt()
    web = client_for(gateway)
    assert await web.login("victor", VIEWER_PASSWORD) == 303
    status, text, _r = await web.get("/web/")
    assert status == 200 and "delete_cache" in text and "victor (viewer)" in text
    assert "Approve" not in text and 'name="nonce"' not in text
    interrupt = await pending_id(env)
    row = await gateway.runs.get_interrupt(interrupt)
    assert row is not None
    status, text, _r = await web.post(f"/web/inbox/{interrupt}", {"nonce": row.nonce, "choice": "a"})
    assert status == 403 and "viewers" in text
    status, _text, _r = await web.post("/web/routing/strategy", {"scope": "*", "strategy": "llm"})
    assert status == 403
    # The dry run changes nothing: a viewer may use it.
    status, text, _r = await web.post("/web/routing/dry-run", {"text": "@react hi"})
    assert status == 200 and "→ react" in text
    assert env.runs == []
    env.fake.push(env.fake.press(ref, approve(buttons)))
    await env.reply("Deleted.")


def test_password_hashes_and_config_checks(make_settings: Callable[..., Settings]) -> None:
    stored = hash_password("correct horse battery")
    assert stored.startswith("scrypt$16384$8$1$") and "correct" not in stored
    assert verify_password("correct horse battery", stored) and not verify_password("wrong", stored)
    assert not verify_password("x", "garbage")
    with pytest.raises(ValueError, match="at least 8"):
        hash_password("short")
    with pytest.raises(ConfigError, match="needs someone to sign in"):
        make_settings(web={"enabled": True})
    with pytest.raises(ConfigError, match="not a password hash"):
        make_settings(web={"users": [{"name": "a", "password_hash": "hunter2"}]})
    settings = load_settings(None, env={"BOT_WEB__ENABLED": "true", "BOT_WEB__TOKEN": WEB_TOKEN}, overrides={})
    assert settings.web.enabled and WEB_TOKEN in settings.secrets()
