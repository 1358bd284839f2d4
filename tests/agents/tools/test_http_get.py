"""http_get: public addresses only (checked after DNS and on every redirect), and bounded.

Test servers listen on loopback, which http_get refuses by default; tests that need a
successful fetch allow exactly the test server's address with ``allow_private``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agents.tools import ToolError, ToolsConfig, builtin_toolset
from agents.tools.base import Tool
from agents.tools.http import PinnedResolver, Policy, non_public, numeric_host

pytestmark = pytest.mark.timeout(30)


@dataclass
class Server:
    host: str
    port: int
    hits: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"


async def _start(host: str) -> tuple[Server, web.AppRunner]:
    app = web.Application()
    server = Server(host, 0)

    @web.middleware
    async def record(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        server.hits.append(request.path)
        server.headers.append(dict(request.headers))
        return await handler(request)

    app.middlewares.append(record)

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello world", content_type="text/plain")

    async def latin1(request: web.Request) -> web.Response:
        return web.Response(body="café".encode("latin-1"), content_type="text/plain", charset="latin-1")

    async def binary(request: web.Request) -> web.Response:
        return web.Response(body=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", content_type="image/png")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="x" * 50_000)

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="nothing here")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def chain(request: web.Request) -> web.Response:
        left = int(request.match_info["n"])
        if left == 0:
            return web.Response(text="end of chain")
        raise web.HTTPFound(f"/chain/{left - 1}")

    async def slow_chain(request: web.Request) -> web.Response:
        await asyncio.sleep(0.3)  # fake platform: a slow site
        raise web.HTTPFound("/slow-chain")

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(10)  # fake platform: a slow site
        return web.Response(text="late")

    async def drip(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(100):
            await response.write(b"x")
            await asyncio.sleep(0.1)  # fake platform: a slow site
        return response

    routes = [
        ("/hello", hello),
        ("/latin1", latin1),
        ("/binary", binary),
        ("/big", big),
        ("/missing", missing),
        ("/redirect", redirect),
        ("/chain/{n}", chain),
        ("/slow-chain", slow_chain),
        ("/slow", slow),
        ("/drip", drip),
    ]
    for path, handler in routes:
        app.router.add_get(path, handler)
    runner = web.AppRunner(app, shutdown_timeout=0.2)  # don't wait for the deliberately slow handlers
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    server.port = runner.addresses[0][1]
    return server, runner


@pytest.fixture
async def local() -> AsyncIterator[Server]:
    """A server on 127.0.0.1."""
    server, runner = await _start("127.0.0.1")
    yield server
    await runner.cleanup()


@pytest.fixture
async def other() -> AsyncIterator[Server]:
    """A server on 127.0.0.2, standing in for an allowed host."""
    server, runner = await _start("127.0.0.2")
    yield server
    await runner.cleanup()


def http_get(tmp_path: Path, **http: object) -> Tool:
    config = ToolsConfig.model_validate({"workspace": str(tmp_path / "ws"), "http": http})
    return {t.name: t for t in builtin_toolset(config).tools}["http_get"]


# -- successful fetches (with the test server explicitly allowed) -----------------------------


async def test_get_an_allowed_private_server(tmp_path: Path, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.1"], user_agent="test-agent/1")
    out = await get.invoke({"url": local.url("/hello")})
    assert out.splitlines()[:4] == [
        "HTTP 200 OK",
        f"URL: {local.url('/hello')}",
        "Content-Type: text/plain; charset=utf-8",
        "",
    ]
    assert out.endswith("hello world")
    assert local.headers[-1]["User-Agent"] == "test-agent/1"


async def test_allowed_by_network_and_by_host_name(tmp_path: Path, local: Server) -> None:
    by_net = http_get(tmp_path, allow_private=["127.0.0.0/8"])
    assert "hello world" in await by_net.invoke({"url": local.url("/hello")})
    by_name = http_get(tmp_path, allow_private=["localhost"])
    assert "hello world" in await by_name.invoke({"url": f"http://localhost:{local.port}/hello"})
    with pytest.raises(ToolError, match="refused"):  # the name is allowed, not the address
        await by_name.invoke({"url": local.url("/hello")})


async def test_status_charset_and_binary(tmp_path: Path, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.1"])
    missing = await get.invoke({"url": local.url("/missing")})
    assert missing.startswith("HTTP 404 Not Found") and missing.endswith("nothing here")
    assert (await get.invoke({"url": local.url("/latin1")})).endswith("café")
    binary = await get.invoke({"url": local.url("/binary")})
    assert "Content-Type: image/png" in binary and "[binary content, 16 bytes, not shown]" in binary


async def test_redirects_are_followed_and_the_final_url_reported(tmp_path: Path, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.1"], max_redirects=3)
    out = await get.invoke({"url": local.url("/chain/3")})
    assert f"URL: {local.url('/chain/0')}" in out and out.endswith("end of chain")
    assert local.hits == ["/chain/3", "/chain/2", "/chain/1", "/chain/0"]


# -- the sandbox ------------------------------------------------------------------------------


async def test_loopback_refused_by_default(tmp_path: Path, local: Server) -> None:
    with pytest.raises(ToolError, match=r"refused: 127\.0\.0\.1 resolves to a loopback address"):
        await http_get(tmp_path).invoke({"url": local.url("/hello")})
    assert local.hits == []


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://017700000001/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://localhost/",
        "http://LOCALHOST/",
        "https://localhost:8443/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "http://[fd00::1]/",
        "http://[fc00::1]/",
        "http://[fec0::1]/",
        "http://[ff02::1]/",
        "http://user:pass@127.0.0.1/",
    ],
)
async def test_private_and_local_addresses_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(ToolError, match="^refused: .* address"):
        await http_get(tmp_path).invoke({"url": url})


@pytest.mark.parametrize("url", ["http://99999999999/", "http://1.2.3.4.5/", "http://127.0.0.1./"])
async def test_malformed_numeric_hosts_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(ToolError, match="not a valid IP address"):
        await http_get(tmp_path).invoke({"url": url})


async def test_redirect_to_loopback_refused(tmp_path: Path, other: Server, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.2"])
    assert "hello world" in await get.invoke({"url": other.url("/hello")})
    for target in [local.url("/hello"), f"http://localhost:{local.port}/hello", f"http://2130706433:{local.port}/"]:
        with pytest.raises(ToolError, match="refused: .* loopback"):
            await get.invoke({"url": other.url(f"/redirect?to={target}")})
    assert local.hits == []


@pytest.mark.parametrize("to", ["file:///etc/passwd", "ftp://example.org/x", "javascript:alert(1)"])
async def test_redirect_to_another_scheme_refused(tmp_path: Path, other: Server, to: str) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.2"])
    with pytest.raises(ToolError, match="only http and https"):
        await get.invoke({"url": other.url(f"/redirect?to={to}")})


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/", "gopher://x/", "example.org", "data:text/plain,hi", ""]
)
async def test_only_http_and_https(tmp_path: Path, url: str) -> None:
    with pytest.raises(ToolError, match="only http and https"):
        await http_get(tmp_path).invoke({"url": url})


async def test_no_host(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="no host"):
        await http_get(tmp_path).invoke({"url": "http:///path"})


# -- DNS: every address checked, and the connection pinned to the checked ones ----------------


@dataclass
class FakeDNS:
    """Names -> successive answers (the last one repeats); other names resolve normally."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def getaddrinfo(self, real: Callable[..., Any], host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in self.answers:
            return real(host, port, *args, **kwargs)
        n = self.calls[host] = self.calls.get(host, 0) + 1
        out: list[tuple[Any, ...]] = []
        for a in self.answers[host][min(n, len(self.answers[host])) - 1]:
            if ":" in a:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port or 0, 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0)))
        return out


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    dns = FakeDNS()
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **kw: dns.getaddrinfo(real, *a, **kw))
    return dns


async def test_any_private_address_of_a_name_refuses_it(tmp_path: Path, fake_dns: FakeDNS) -> None:
    fake_dns.answers["mixed.example"] = [["93.184.216.34", "10.1.2.3"]]
    fake_dns.answers["v6.example"] = [["2606:4700::1111", "fd00::5"]]
    get = http_get(tmp_path)
    with pytest.raises(ToolError, match=r"refused: mixed\.example resolves to a private address \(10\.1\.2\.3\)"):
        await get.invoke({"url": "http://mixed.example/"})
    with pytest.raises(ToolError, match=r"refused: v6\.example resolves to a private address \(fd00::5\)"):
        await get.invoke({"url": "http://v6.example/"})


async def test_dns_rebinding_gets_nowhere(tmp_path: Path, fake_dns: FakeDNS, other: Server, local: Server) -> None:
    # First answer: the allowed 127.0.0.2; any later lookup would say 127.0.0.1 (refused).
    fake_dns.answers["rebind.example"] = [["127.0.0.2"], ["127.0.0.1"]]
    get = http_get(tmp_path, allow_private=["127.0.0.2"])
    out = await get.invoke({"url": f"http://rebind.example:{other.port}/hello"})
    assert out.endswith("hello world") and other.hits == ["/hello"] and local.hits == []
    assert fake_dns.calls["rebind.example"] == 1  # resolved once; the connection used that answer


async def test_resolver_refuses_names_it_was_not_shown(tmp_path: Path) -> None:
    resolver = PinnedResolver(Policy([]))
    with pytest.raises(ToolError, match="refused: localhost"):
        await resolver.resolve("localhost", 80)


async def test_unresolvable_name(tmp_path: Path, fake_dns: FakeDNS) -> None:
    with pytest.raises(ToolError, match="cannot resolve no-such-host.invalid"):
        await http_get(tmp_path).invoke({"url": "http://no-such-host.invalid/"})


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("192.168.0.1", "private"),
        ("172.31.255.255", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "private"),
        ("192.0.2.1", "private"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fd12:3456::1", "private"),
        ("fec0::1", "site-local"),
        ("ff0e::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a00:1", "private"),
        ("2002:a00:1::", "private"),
        ("::7f00:1", "reserved"),
        ("2001:db8::1", "private"),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
    ],
)
def test_address_classes(address: str, why: str | None) -> None:
    assert non_public(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize(
    ("host", "ip"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("::ffff:7f00:1", "::ffff:7f00:1"),
        ("example.org", None),
        ("localhost", None),
    ],
)
def test_numeric_hosts(host: str, ip: str | None) -> None:
    parsed = numeric_host(host)
    assert (str(parsed) if parsed else None) == ip


# -- limits -----------------------------------------------------------------------------------


async def test_size_limit_truncates(tmp_path: Path, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.1"], max_bytes=100)
    out = await get.invoke({"url": local.url("/big")})
    assert out.endswith("\n\n[truncated at 100 bytes]")
    assert "x" * 100 in out and "x" * 101 not in out


async def test_redirect_limit(tmp_path: Path, local: Server) -> None:
    get = http_get(tmp_path, allow_private=["127.0.0.1"], max_redirects=2)
    assert (await get.invoke({"url": local.url("/chain/2")})).endswith("end of chain")
    local.hits.clear()
    with pytest.raises(ToolError, match=r"too many redirects \(more than 2\)"):
        await get.invoke({"url": local.url("/chain/3")})
    assert local.hits == ["/chain/3", "/chain/2", "/chain/1"]
    none = http_get(tmp_path, allow_private=["127.0.0.1"], max_redirects=0)
    with pytest.raises(ToolError, match="too many redirects"):
        await none.invoke({"url": local.url("/chain/1")})


@pytest.mark.parametrize("path", ["/slow", "/drip", "/slow-chain"])
async def test_total_time_limit(tmp_path: Path, local: Server, path: str) -> None:
    # /slow never answers in time, /drip trickles its body, /slow-chain redirects forever, 0.3 s a hop:
    # the limit covers the whole fetch, not each read or each hop.
    # Only the whole fetch's limit gives this error: per read or per hop, /drip would finish after 10 s and
    # /slow-chain stop at "too many redirects" after 6 s.
    get = http_get(tmp_path, allow_private=["127.0.0.1"], timeout_s=0.8, max_redirects=20)
    with pytest.raises(ToolError, match=r"timed out after 0\.8 s"):
        await get.invoke({"url": local.url(path)})


async def test_connection_refused_is_a_tool_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ToolError, match="request failed"):
        await http_get(tmp_path, allow_private=["127.0.0.1"]).invoke({"url": f"http://127.0.0.1:{port}/"})
