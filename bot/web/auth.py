"""Who may use the console: password hashes (scrypt), sessions in the store, the login rate limit.

A session cookie holds a random token; the store keeps only its SHA-256, so a copy of the database signs
nobody in.  The CSRF token of a session is an HMAC of its cookie token: nothing more to store, and a page
of one session never works for another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.web import WebSection
from bot.store.ports import WebSessionRepo

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
"""RFC 7914's interactive parameters (16 MiB; the time a hash takes: see bench/README.md, "The web console's password
hash"): a leaked hash costs an attacker the same."""


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """``scrypt$N$r$p$salt$hash`` for ``web.users[].password_hash``."""
    if len(password) < 8:
        raise ValueError("a password needs at least 8 characters")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=128 * 1024 * 1024, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${n}${r}${p}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        _kind, n, r, p, salt, digest = stored.split("$")
        expected = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=128 * 1024 * 1024,
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


@cache
def _dummy() -> str:
    """Checked against for an unknown name, so the answer takes as long as for a known one (made on first use:
    a hash takes a noticeable time, and most gateways never serve the console)."""
    return hash_password("not-a-real-password")


@dataclass(frozen=True)
class WebUserSession:
    user: str
    role: str
    token: str

    @property
    def actor(self) -> str:
        """How the audit log names this person."""
        return f"web:{self.user}"

    @property
    def may_act(self) -> bool:
        return self.role == "admin"

    @property
    def csrf(self) -> str:
        return csrf_for(self.token)


def csrf_for(token: str) -> str:
    return hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Sessions:
    """Sessions in the ``web_sessions`` table (so they survive a restart and work on every gateway)."""

    def __init__(self, config: WebSection, sessions: WebSessionRepo, clock: Clock = SYSTEM_CLOCK) -> None:
        """``clock``: when sessions expire."""
        self.config = config
        self.sessions = sessions
        self.clock = clock

    def check(self, name: str, password: str) -> str | None:
        """Who signs in with ``name`` and ``password`` (``token`` for the admin token, given with no name or
        ``token``), else None."""
        token = self.config.token
        if token and hmac.compare_digest(password.encode(), token.encode()) and name in ("", "token"):
            return "token"
        user = self.config.user(name)
        ok = verify_password(password, user.password_hash if user else _dummy())
        return name if ok and user is not None else None

    async def open(self, name: str) -> WebUserSession:
        """A new session for ``name`` (``token`` for the admin token's)."""
        token = secrets.token_urlsafe(32)
        now = self.clock.utcnow()
        expires = now + timedelta(hours=self.config.session_hours)
        await self.sessions.add(_digest(token), name, now, expires)
        return WebUserSession(name, self.config.role_of(name) or "viewer", token)

    async def find(self, token: str) -> WebUserSession | None:
        """The session of a cookie's token; its rights are what the configuration says now (a user removed or
        made a viewer since signing in loses them at once)."""
        if not token or len(token) > 128:
            return None
        user = await self.sessions.user(_digest(token), self.clock.utcnow())
        role = self.config.role_of(user) if user is not None else None
        return WebUserSession(user, role, token) if user is not None and role is not None else None

    async def close(self, token: str) -> None:
        await self.sessions.remove(_digest(token))


class LoginLimiter:
    """At most ``attempts`` failed sign-ins per address and per name in ``window_s`` (in this process)."""

    MAX_KEYS = 10_000

    def __init__(self, attempts: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.attempts = attempts
        self.window_s = window_s
        self.clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, *keys: str) -> float:
        """Seconds until ``keys`` may try again (0: now)."""
        now = self.clock()
        wait = 0.0
        for key in keys:
            times = self._failures.get(key)
            if times is None:
                continue
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) >= self.attempts:
                wait = max(wait, times[0] + self.window_s - now)
        return wait

    def failed(self, *keys: str) -> None:
        now = self.clock()
        for key in keys:
            self._failures.setdefault(key, deque()).append(now)
            self._failures.move_to_end(key)
        while len(self._failures) > self.MAX_KEYS:
            self._failures.popitem(last=False)

    def succeeded(self, *keys: str) -> None:
        for key in keys:
            self._failures.pop(key, None)
