"""``http_get``: GET a URL on the public internet, and nothing else.

Every hop (the first URL and each redirect, followed by hand) is checked
before it is requested: the scheme must be http or https, and every address
the host resolves to must be public.  Private, loopback, link-local,
multicast, CGNAT, reserved and unspecified addresses are refused, including
IPv4 addresses wrapped in IPv6 (``::ffff:127.0.0.1``, NAT64, 6to4) and IPv4
literals in any spelling (``2130706433``, ``0x7f.1``, ``127.1``).  The
connection goes only to the addresses that were checked (a per-request
resolver pins them), so a name that re-resolves elsewhere (DNS rebinding)
gets nowhere.  Exceptions are configured in ``allow_private``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from agents.tools.base import Tool, ToolError, tool
from agents.tools.config import HttpToolConfig

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_REDIRECTS = (301, 302, 303, 307, 308)
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_6TO4 = ipaddress.IPv6Network("2002::/16")


def embedded_ipv4(ip: IP) -> IP:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4), else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    return ip


def non_public(ip: IP) -> str | None:
    """Why ``ip`` is not a public unicast address (``"loopback"``, ``"private"``, …), or None if it is."""
    ip = embedded_ipv4(ip)
    checks: list[tuple[bool, str]] = [
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT, "shared (CGNAT)"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "site-local"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "non-public"),
    ]
    return next((why for hit, why in checks if hit), None)


def numeric_host(host: str) -> IP | None:
    """The address a numeric host stands for, in any spelling C's ``inet_aton`` accepts; None for names."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host.replace(".", "").isalnum() and not host.endswith("."):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    return None


class Policy:
    """Which addresses a request may reach: public ones, and those ``allow_private`` names."""

    def __init__(self, allow_private: list[str]) -> None:
        self.hosts: set[str] = set()
        self.networks: list[Network] = []
        for entry in allow_private:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(_norm(entry))

    def check(self, host: str, ip: IP) -> None:
        """Raise :class:`ToolError` unless ``host`` may be reached at ``ip``."""
        if _norm(host) in self.hosts or any(_within(ip, net) for net in self.networks):
            return
        why = non_public(ip)
        if why is not None:
            raise ToolError(
                f"refused: {host} resolves to a {why} address ({ip}); http_get only reaches public addresses"
            )


def _norm(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _within(ip: IP, net: Network) -> bool:
    return ip in net or embedded_ipv4(ip) in net


class PinnedResolver(AbstractResolver):
    """Hands aiohttp only the addresses :meth:`vet` checked, so nothing is resolved twice."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.pins: dict[str, list[tuple[socket.AddressFamily, str]]] = {}

    async def vet(self, url: str | URL) -> URL:
        """Parse and check one hop: scheme, host, and every address the host has."""
        try:
            parsed = url if isinstance(url, URL) else URL(url)
        except (ValueError, TypeError):
            raise ToolError(f"not a valid URL: {str(url)[:200]!r}") from None
        if parsed.scheme not in ("http", "https"):
            raise ToolError(f"only http and https URLs are allowed, not {parsed.scheme or 'no scheme'!r}: {url}")
        host = parsed.raw_host
        if not host:
            raise ToolError(f"the URL has no host: {url}")
        literal = numeric_host(host)
        if literal is not None:
            self.policy.check(host, literal)
            self.pins[host] = [(_family(literal), str(literal))]
            return parsed
        if ":" in host or host.replace(".", "").isdigit():
            # aiohttp would connect to such a host without our resolver: it must be a real address.
            raise ToolError(f"not a valid IP address: {host}")
        addresses = await _getaddrinfo(host)
        for _fam, address in addresses:
            self.policy.check(host, ipaddress.ip_address(address))
        self.pins[host] = addresses
        return parsed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        pinned = self.pins.get(host)
        if pinned is None:  # not seen by vet() (should not happen): check it now
            pinned = await _getaddrinfo(host)
            for _fam, address in pinned:
                self.policy.check(host, ipaddress.ip_address(address))
        wanted = [(fam, a) for fam, a in pinned if family in (socket.AF_UNSPEC, fam)] or pinned
        return [
            {"hostname": host, "host": a, "port": port, "family": fam, "proto": 0, "flags": socket.AI_NUMERICHOST}
            for fam, a in wanted
        ]

    async def close(self) -> None:
        return None


def _family(ip: IP) -> socket.AddressFamily:
    return socket.AF_INET if ip.version == 4 else socket.AF_INET6


async def _getaddrinfo(host: str) -> list[tuple[socket.AddressFamily, str]]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolError(f"cannot resolve {host}: {getattr(exc, 'strerror', None) or exc}") from None
    out: list[tuple[socket.AddressFamily, str]] = []
    for fam, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0]).split("%")[0]
        if (fam, address) not in out:
            out.append((fam, address))
    if not out:
        raise ToolError(f"cannot resolve {host}: no addresses")
    return out


def http_tools(config: HttpToolConfig) -> list[Tool]:
    policy = Policy(config.allow_private)

    @tool(risk="low")
    async def http_get(url: str) -> str:
        """Fetch a web page or API URL with GET (public internet addresses only) and return its status and text."""
        return await fetch(url, config, policy)

    return [http_get]


async def fetch(url: str, config: HttpToolConfig, policy: Policy | None = None) -> str:
    """GET ``url`` under ``config``'s limits; the result is a short header block and the decoded text."""
    resolver = PinnedResolver(policy or Policy(config.allow_private))
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, force_close=True)
    timeout = aiohttp.ClientTimeout(total=config.timeout_s)
    headers = {"User-Agent": config.user_agent, "Accept": "*/*"}
    try:
        async with asyncio.timeout(config.timeout_s):
            async with aiohttp.ClientSession(
                connector=connector, timeout=timeout, headers=headers, trust_env=False
            ) as session:
                return await _follow(session, resolver, url, config)
    except TimeoutError:
        raise ToolError(f"timed out after {config.timeout_s:g} s: {url}") from None
    except aiohttp.ClientError as exc:
        raise ToolError(f"request failed: {exc.__class__.__name__}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise ToolError(f"request failed: {exc.__class__.__name__}: {exc}") from None


async def _follow(session: aiohttp.ClientSession, resolver: PinnedResolver, url: str, config: HttpToolConfig) -> str:
    target = await resolver.vet(url)
    redirects = 0
    while True:
        async with session.get(target, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status not in _REDIRECTS or not location:
                body, truncated = await _read(response, config.max_bytes)
                return _describe(response, body, truncated, config.max_bytes)
        if redirects >= config.max_redirects:
            raise ToolError(f"too many redirects (more than {config.max_redirects}); last one to {location}")
        redirects += 1
        try:
            following = target.join(URL(location))
        except (ValueError, TypeError):
            raise ToolError(f"redirected to an invalid URL: {location[:200]!r}") from None
        target = await resolver.vet(following)


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
    content_type = response.headers.get("Content-Type", "-")
    lines = [
        f"HTTP {response.status} {response.reason or ''}".strip(),
        f"URL: {response.url}",
        f"Content-Type: {content_type}",
        "",
    ]
    if b"\x00" in body[:4096]:
        lines.append(f"[binary content, {len(body)}{'+' if truncated else ''} bytes, not shown]")
        return "\n".join(lines)
    charset: Any = response.charset or "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    lines.append(text)
    if truncated:
        lines.append(f"\n[truncated at {limit} bytes]")
    return "\n".join(lines)
