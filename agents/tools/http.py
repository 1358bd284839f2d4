"""``http_get``: GET a URL on the public internet, and nothing else.

Private, loopback, link-local, multicast, CGNAT and other non-global
addresses are refused after DNS resolution and again on every redirect
(redirects are followed by hand); IP literals in any spelling (``2130706433``,
``0x7f.1``, ``[::ffff:127.0.0.1]``) resolve to the same checks.  The
connection only ever goes to addresses that were checked, so a name that
re-resolves to something else (DNS rebinding) gets nowhere.  Exceptions are
configured in ``allow_private`` (hosts or CIDR networks).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urljoin

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from agents.tools.base import Tool, ToolError, tool
from agents.tools.config import HttpToolConfig

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


class Policy:
    """Which addresses a request may reach."""

    def __init__(self, allow_private: list[str]) -> None:
        self.hosts = {a.lower() for a in allow_private if not _network(a)}
        self.networks = [n for n in (_network(a) for a in allow_private) if n is not None]

    def check(self, host: str, ip: IP) -> None:
        if host.lower() in self.hosts or any(ip in n for n in self.networks):
            return
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        target = mapped or ip
        if not target.is_global or target.is_multicast:
            raise ToolError(f"refused: {host} resolves to a private or local address ({target})")


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


class VettedResolver(AbstractResolver):
    """Resolves like the system, then drops the request unless every address passes the policy."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        infos = await resolve_all(host, port)
        out: list[ResolveResult] = []
        for fam, address in infos:
            self.policy.check(host, ipaddress.ip_address(address))
            out.append(
                {
                    "hostname": host,
                    "host": address,
                    "port": port,
                    "family": fam,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            )
        return out

    async def close(self) -> None:
        return None


async def resolve_all(host: str, port: int) -> list[tuple[socket.AddressFamily, str]]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve {host}: {exc.strerror}") from None
    return [(fam, str(sockaddr[0]).split("%")[0]) for fam, *_rest, sockaddr in infos]


async def vet_url(url: str, policy: Policy) -> URL:
    """Parse and check a URL: scheme, host, and every address the host has."""
    try:
        parsed = URL(url)
    except ValueError:
        raise ToolError(f"not a URL: {url!r}") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs are allowed, not {parsed.scheme or 'no scheme'!r}")
    host = parsed.host
    if not host:
        raise ToolError(f"the URL has no host: {url!r}")
    try:
        policy.check(host, ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        for _fam, address in await resolve_all(host, parsed.port or 0):
            policy.check(host, ipaddress.ip_address(address))
    return parsed


def http_tools(config: HttpToolConfig) -> list[Tool]:
    policy = Policy(config.allow_private)

    @tool(risk="low")
    async def http_get(url: str) -> str:
        """Fetch a web page or API URL with GET and return its status and text (public addresses only)."""
        timeout = aiohttp.ClientTimeout(total=config.timeout_s)
        connector = aiohttp.TCPConnector(resolver=VettedResolver(policy), use_dns_cache=False)
        headers = {"User-Agent": config.user_agent}
        try:
            async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers) as session:
                return await _get(session, url, policy, config)
        except TimeoutError:
            raise ToolError(f"timed out after {config.timeout_s:g} s") from None
        except aiohttp.ClientError as exc:
            raise ToolError(f"request failed: {exc.__class__.__name__}: {exc}") from None

    return [http_get]


async def _get(session: aiohttp.ClientSession, url: str, policy: Policy, config: HttpToolConfig) -> str:
    current = url
    for _hop in range(config.max_redirects + 1):
        target = await vet_url(current, policy)
        async with session.get(target, allow_redirects=False) as response:
            if response.status in (301, 302, 303, 307, 308) and "Location" in response.headers:
                current = urljoin(str(target), response.headers["Location"])
                continue
            body, truncated = await _read(response, config.max_bytes)
            return _describe(response, body, truncated, config.max_bytes)
    raise ToolError(f"too many redirects (more than {config.max_redirects})")


async def _read(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _describe(response: aiohttp.ClientResponse, body: bytes, truncated: bool, limit: int) -> str:
    charset: Any = response.charset or "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    head = f"HTTP {response.status} {response.reason or ''}".strip()
    lines = [head, f"URL: {response.url}", f"Content-Type: {response.headers.get('Content-Type', '-')}", "", text]
    if truncated:
        lines.append(f"\n[truncated at {limit} bytes]")
    return "\n".join(lines)
