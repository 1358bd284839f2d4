"""What every console page shares: how values print, the static assets, and the headers each response gets."""

from __future__ import annotations

from importlib import resources
from typing import Any

from aiohttp import web
from markupsafe import Markup

from agents.visible import visible


def printed(value: Any) -> Any:
    """What a template prints: text with zero-width, bidi and control characters as ``\\uXXXX`` (markup the
    console made itself, such as a graph's SVG, is left as it is)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, spaces=False)
    return value


def asset(name: str) -> str:
    return resources.files("bot.web").joinpath("static", name).read_text(encoding="utf-8")


def harden(response: web.StreamResponse, nonce: str = "") -> web.StreamResponse:
    """Headers for every console response: scripts of this site only, styles of this page only, no framing."""
    style = f"'nonce-{nonce}'" if nonce else "'none'"
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; script-src 'self'; style-src {style}; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"
    return response
