"""The ``web`` section: the operator's console on the shared HTTP server (off by default)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

HASH_FORMAT = re.compile(r"^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$")
"""``scrypt$N$r$p$salt$hash`` (base64): what ``bot web hash-password`` prints."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WebUser(_Section):
    """A person who may sign in to the console."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.@-]{1,64}$")
    role: Literal["admin", "viewer"] = "viewer"
    """``admin`` acts (answers requests, switches routing); ``viewer`` only looks."""
    password_hash: str
    """From ``bot web hash-password`` (scrypt); never the password itself."""

    @field_validator("password_hash")
    @classmethod
    def _hashed(cls, value: str) -> str:
        if not HASH_FORMAT.match(value.strip()):
            raise ValueError(
                "not a password hash: run `bot web hash-password` and paste what it prints (scrypt$…), "
                "never the password itself"
            )
        return value.strip()


class WebSection(_Section):
    enabled: bool = False
    """Serve the console at ``path`` on the HTTP server (``http.port``), which then starts."""
    path: str = Field("/web", pattern=r"^/[A-Za-z0-9_/-]*[A-Za-z0-9_-]$")
    users: list[WebUser] = Field(default_factory=list)
    token: str = ""
    """An admin token (``BOT_WEB__TOKEN``): signing in with it makes you the admin ``token``."""
    session_hours: float = Field(12, gt=0, le=24 * 30)
    """A session ends this long after sign-in (or at sign-out)."""
    login_attempts: int = Field(5, ge=1)
    """Failed sign-ins allowed per address and per name within ``login_window_s``; then refused until it passes."""
    login_window_s: float = Field(300, gt=0)
    secure_cookies: Literal["auto", "always", "never"] = "auto"
    """``auto``: the session cookie is ``Secure`` when the request came over HTTPS (directly or, with
    ``trust_proxy``, as ``X-Forwarded-Proto``)."""
    trust_proxy: bool = False
    """Believe ``X-Forwarded-For`` / ``X-Forwarded-Proto`` (behind a reverse proxy you run)."""

    @model_validator(mode="after")
    def _someone(self) -> WebSection:
        names = [u.name for u in self.users]
        if len(set(names)) != len(names):
            raise ValueError("users: each name once")
        if "token" in names:
            raise ValueError("users: 'token' is the name of the admin token's sessions")
        if self.enabled and not self.users and not self.token:
            raise ValueError(
                "web.enabled needs someone to sign in: web.users (with `bot web hash-password`) or BOT_WEB__TOKEN"
            )
        return self

    def user(self, name: str) -> WebUser | None:
        return next((u for u in self.users if u.name == name), None)

    def role_of(self, name: str) -> str | None:
        """What ``name`` may do now (``token``: the admin token's sessions); None: nobody by that name."""
        if name == "token":
            return "admin" if self.token else None
        user = self.user(name)
        return user.role if user is not None else None
