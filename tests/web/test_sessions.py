"""Console sign-ins on the in-memory session repository (``tests/fakes/repos.py``): a session is found by its
token while it lasts and the configuration still names its user; the table keeps only a digest of the token."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.clock import FakeClock
from bot.config.web import WebSection, WebUser
from bot.web.auth import Sessions, hash_password
from tests.fakes.repos import FakeWebSessions

HASH = hash_password("correct horse", n=2**4)


def _config() -> WebSection:
    users = [WebUser(name="ada", role="admin", password_hash=HASH), WebUser(name="bob", password_hash=HASH)]
    return WebSection(users=users, session_hours=1)


async def test_a_session_lasts_its_hours_and_ends_at_sign_out() -> None:
    clock = FakeClock(datetime(2026, 11, 26, 7, 0, tzinfo=UTC))
    rows = FakeWebSessions()
    sessions = Sessions(_config(), rows, clock)
    assert sessions.check("ada", "correct horse") == "ada" and sessions.check("ada", "wrong") is None
    opened = await sessions.open("ada")
    assert opened.token not in rows.rows, "only the token's digest is stored"
    found = await sessions.find(opened.token)
    assert found is not None and (found.user, found.role) == ("ada", "admin")
    await clock.advance(3601)
    assert await sessions.find(opened.token) is None, "expired"
    again = await sessions.open("bob")
    assert len(rows.rows) == 1, "signing in drops the expired sessions"
    await sessions.close(again.token)
    assert await sessions.find(again.token) is None and rows.rows == {}


async def test_rights_are_what_the_configuration_says_now() -> None:
    rows = FakeWebSessions()
    opened = await Sessions(_config(), rows, FakeClock()).open("bob")
    admin_only = WebSection(users=[WebUser(name="ada", role="admin", password_hash=HASH)])
    assert await Sessions(admin_only, rows, FakeClock()).find(opened.token) is None, "bob was removed"
    assert await Sessions(_config(), rows, FakeClock()).find("x" * 200) is None
