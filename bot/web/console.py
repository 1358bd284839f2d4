"""The web console's HTTP side: pages, sign-in, CSRF, live inbox updates, on the gateway's HTTP server.

Every route under ``web.path`` needs a session except the sign-in page; every POST needs the session's CSRF
token (and, when the browser sends one, an ``Origin`` of this server); only admins act.  Pages are rendered on
the server (Jinja2, autoescaped); every value a page prints shows its invisible and direction-changing characters
as the chat prompt does (:func:`printed`); the one script keeps the inbox live over server-sent events.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from bot.clock import SYSTEM_CLOCK, Clock
from bot.config.web import WebSection
from bot.events import ChatKey
from bot.http import HttpServer
from bot.ops.metrics import Sample
from bot.pairing import PairingDesk
from bot.routing import STRATEGIES
from bot.routing.policy import GLOBAL
from bot.web.actions import ConsoleActions
from bot.web.auth import LoginLimiter, Sessions, WebUserSession
from bot.web.chat_page import ChatPage, Talk
from bot.web.data import ConsoleData
from bot.web.eval_pages import EvalPages
from bot.web.health import HealthView
from bot.web.responses import asset, harden, printed

log = logging.getLogger(__name__)

COOKIE = "bot_session"
LOGIN_COOKIE = "bot_login_csrf"
Handler = Callable[[web.Request, WebUserSession], Awaitable[web.StreamResponse]]
Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebConsole:
    def __init__(
        self,
        config: WebSection,
        *,
        data: ConsoleData,
        actions: ConsoleActions,
        sessions: Sessions,
        health: HealthView,
        poll_s: float = 1.0,
        clock: Clock = SYSTEM_CLOCK,
        pairing: PairingDesk | None = None,
        talk: Talk | None = None,
    ) -> None:
        """``clock``: the sign-in limiter's windows; ``pairing``: strangers waiting to be let in (the inbox);
        ``talk``: the Chat page's parts (the ``web`` channel enabled)."""
        self.config = config
        self.pairing = pairing
        self.root = config.path.rstrip("/")
        self.data = data
        self.actions = actions
        self.sessions = sessions
        self.health = health
        self.poll_s = poll_s
        self.limiter = LoginLimiter(config.login_attempts, config.login_window_s, clock.monotonic)
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("bot.web", "templates"), autoescape=True, enable_async=False, finalize=printed
        )
        self.css, self.js = asset("console.css"), asset("console.js")
        self.talk = ChatPage(self, talk, asset("talk.js")) if talk is not None else None
        self.templates.globals["talk"] = self.talk is not None
        self._closing = asyncio.Event()

    def mount(self, http: HttpServer) -> None:
        r, add = self.root, http.app.router
        add.add_get(r, self._to_inbox)
        add.add_get(f"{r}/login", self._login_page)
        add.add_post(f"{r}/login", self._login)
        add.add_post(f"{r}/logout", self._acting(self._logout, admin=False))
        add.add_get(f"{r}/static/console.js", self._viewing(self._script))
        add.add_get(f"{r}/", self._viewing(self._inbox))
        add.add_get(f"{r}/inbox/items", self._viewing(self._items))
        ident = "{id:[A-Za-z0-9]{1,32}}"
        add.add_post(f"{r}/inbox/{ident}", self._acting(self._answer))
        add.add_post(f"{r}/pairing/" + "{code:[A-Z0-9]{1,16}}", self._acting(self._pair))
        add.add_get(f"{r}/events", self._viewing(self._events))
        add.add_get(f"{r}/chats", self._viewing(self._chats))
        add.add_get(f"{r}/chats/{{key}}", self._viewing(self._chat))
        add.add_get(f"{r}/runs/{ident}", self._viewing(self._run))
        add.add_post(f"{r}/runs/{ident}/reroute", self._acting(self._reroute))
        add.add_get(f"{r}/routing", self._viewing(self._routing))
        add.add_post(f"{r}/routing/strategy", self._acting(self._strategy))
        add.add_post(f"{r}/routing/dry-run", self._acting(self._dry_run, admin=False))
        add.add_get(f"{r}/agents", self._viewing(self._agents))
        add.add_get(f"{r}/health", self._viewing(self._health))
        EvalPages(self).mount(http)
        if self.talk is not None:
            self.talk.mount(http)

    def close(self) -> None:
        """End the live-update streams (the server stops after)."""
        self._closing.set()

    # -- access ------------------------------------------------------------------------------

    async def _session(self, request: web.Request) -> WebUserSession | None:
        return await self.sessions.find(request.cookies.get(COOKIE, ""))

    def _viewing(self, handler: Handler) -> Route:
        async def guarded(request: web.Request) -> web.StreamResponse:
            session = await self._session(request)
            if session is None:
                if request.path.endswith(("/items", "/events", ".js")):
                    return self._plain(401, "sign in first")
                return self._redirect(f"{self.root}/login?next={quote(request.path_qs, safe='')}")
            return await handler(request, session)

        return guarded

    def _acting(self, handler: Handler, *, admin: bool = True) -> Route:
        async def guarded(request: web.Request) -> web.StreamResponse:
            session = await self._session(request)
            if session is None:
                return self._plain(401, "sign in first")
            form = await request.post()
            if not self._same_origin(request) or not hmac.compare_digest(
                str(form.get("csrf", "")).encode(), session.csrf.encode()
            ):
                await self.actions.audit(session, "web", "web.refused", request.path, "CSRF check failed")
                return self._plain(403, "refused: this form did not come from this console (CSRF check failed)")
            if admin and not session.may_act:
                await self.actions.audit(session, "web", "web.refused", request.path, "viewer")
                return self._plain(403, "refused: viewers can look but not act")
            return await handler(request, session)

        return guarded

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not sent (older browsers): the CSRF token decides
        host = request.headers.get("X-Forwarded-Host") if self.config.trust_proxy else None
        return urlsplit(origin).netloc == (host or request.host)

    def _client(self, request: web.Request) -> str:
        forwarded = request.headers.get("X-Forwarded-For", "") if self.config.trust_proxy else ""
        return forwarded.split(",")[0].strip() or request.remote or "?"

    def _secure(self, request: web.Request) -> bool:
        if self.config.secure_cookies != "auto":
            return self.config.secure_cookies == "always"
        proto = request.headers.get("X-Forwarded-Proto", "") if self.config.trust_proxy else ""
        return request.secure or proto == "https"

    # -- responses ---------------------------------------------------------------------------

    def _render(
        self, template: str, session: WebUserSession | None, *, status: int = 200, **values: Any
    ) -> web.Response:
        nonce = secrets.token_urlsafe(12)
        text = self.templates.get_template(template).render(
            root=self.root,
            session=session,
            css=self.css,
            nonce=nonce,
            can_act=bool(session and session.may_act),
            **values,
        )
        response = web.Response(text=text, status=status, content_type="text/html")
        self._harden(response, nonce)
        return response

    _harden = staticmethod(harden)

    def _plain(self, status: int, text: str) -> web.StreamResponse:
        return self._harden(web.Response(status=status, text=text + "\n"))

    def _redirect(self, to: str) -> web.StreamResponse:
        return self._harden(web.Response(status=303, headers={"Location": to}))

    async def _to_inbox(self, request: web.Request) -> web.StreamResponse:
        return self._redirect(f"{self.root}/")

    async def _page(self, name: str, session: WebUserSession, page: str, **values: Any) -> web.Response:
        if "pending_count" not in values:  # the inbox counts what it shows
            values["pending_count"] = await self.data.pending_count()
        return self._render(name, session, page=page, **values)

    # -- sign-in ------------------------------------------------------------------------------

    async def _login_page(self, request: web.Request, *, status: int = 200, flash: str = "") -> web.StreamResponse:
        token = secrets.token_urlsafe(24)
        nxt = request.query.get("next", "") if request.method == "GET" else ""
        response = self._render(
            "login.html",
            None,
            status=status,
            title="Sign in",
            login_csrf=token,
            next=nxt,
            name="",
            flash=flash,
        )
        response.set_cookie(
            LOGIN_COOKIE, token, path=self.root, httponly=True, samesite="Strict", secure=self._secure(request)
        )
        return response

    async def _login(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        given = str(form.get("csrf", ""))
        cookie = request.cookies.get(LOGIN_COOKIE, "")
        if not cookie or not hmac.compare_digest(given.encode(), cookie.encode()) or not self._same_origin(request):
            return await self._login_page(request, status=403, flash="Refused: reload the page and sign in again.")
        name, password = str(form.get("name", "")).strip()[:64], str(form.get("password", ""))
        keys = (f"ip:{self._client(request)}", f"name:{name.casefold()}")
        wait = self.limiter.retry_after(*keys)
        if wait > 0:
            response = await self._login_page(
                request, status=429, flash=f"Too many failed sign-ins: try again in {wait:.0f} s."
            )
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        user = await asyncio.to_thread(self.sessions.check, name, password)
        if user is None:
            self.limiter.failed(*keys)
            await self.actions.audit(f"web:{name or '?'}", "web", "web.login", self._client(request), "refused")
            log.warning("web console: failed sign-in for %r from %s", name, self._client(request))
            return await self._login_page(request, status=401, flash="Wrong name or password.")
        self.limiter.succeeded(*keys)
        session = await self.sessions.open(user)
        await self.actions.audit(session, "web", "web.login", self._client(request), session.role)
        nxt = str(form.get("next", ""))
        target = nxt if nxt.startswith(self.root + "/") and not nxt.startswith("//") else f"{self.root}/"
        response = self._redirect(target)
        response.set_cookie(
            COOKIE,
            session.token,
            path=self.root,
            httponly=True,
            samesite="Strict",
            secure=self._secure(request),
            max_age=int(self.config.session_hours * 3600),
        )
        response.del_cookie(LOGIN_COOKIE, path=self.root)
        return response

    async def _logout(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        await self.sessions.close(session.token)
        await self.actions.audit(session, "web", "web.logout", None, None)
        response = self._redirect(f"{self.root}/login")
        response.del_cookie(COOKIE, path=self.root)
        return response

    async def _script(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        return self._harden(web.Response(text=self.js, content_type="application/javascript"))

    # -- inbox -------------------------------------------------------------------------------

    async def _inbox(
        self, request: web.Request, session: WebUserSession, *, flash: str = "", ok: bool = True, status: int = 200
    ) -> web.StreamResponse:
        items = await self.data.inbox()
        done = request.query.get("done")
        if done and not flash:
            row = await self.data.interrupt(done)
            if row is not None and row.status != "pending":
                flash = f"Answered: {row.kind.replace('_', ' ')} in {row.chat_key} ({row.status} by {row.resolved_by})."
        response = await self._page(
            "inbox.html",
            session,
            "inbox",
            title="Inbox",
            items=items,
            pending_count=len(items),
            pairing=await self.pairing.waiting() if self.pairing is not None else [],
            flash=flash,
            flash_ok=ok,
        )
        response.set_status(status)
        return response

    async def _items(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        return self._render("items.html", session, items=await self.data.inbox())

    async def _answer(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        form = await request.post()  # read once by the guard; aiohttp keeps it
        arguments = {k.removeprefix("args:"): str(v) for k, v in form.items() if k.startswith("args:")}
        outcome = await self.actions.answer(
            session,
            request.match_info["id"],
            str(form.get("nonce", "")),
            str(form.get("choice", "")),
            text=str(form["text"]) if "text" in form else None,
            arguments=arguments,
        )
        if outcome.ok:
            return self._redirect(f"{self.root}/?done={request.match_info['id']}")
        return await self._inbox(request, session, flash=outcome.message, ok=False, status=outcome.status)

    async def _pair(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        """Let a stranger in with their pairing code, as ``/pair CODE`` would (audited as ``web:<name>``)."""
        if self.pairing is None:
            return self._plain(404, "pairing is not available here")
        said = await self.pairing.approve(request.match_info["code"], session.actor)
        return await self._inbox(request, session, flash=said, ok=said.startswith("✅"))

    async def _events(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        """Server-sent events: ``inbox`` whenever the set of pending requests changes (looked at every
        ``poll_s``, which also sees what other gateway processes changed); a comment every 15 s keeps proxies
        from closing the stream."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        response.headers["X-Accel-Buffering"] = "no"
        # Read before the browser hears the stream is open (it then reads the inbox itself): nothing raised in
        # between falls through the gap.
        seen = await self.data.version()
        await response.prepare(request)
        quiet = 0.0
        try:
            # Reconnect soon after a restart: a request raised meanwhile shows within a couple of seconds.
            await response.write(b"retry: 1000\n\n")
            while not self._closing.is_set():
                try:
                    await asyncio.wait_for(self._closing.wait(), self.poll_s)
                    break
                except TimeoutError:
                    pass
                if await self.sessions.find(session.token) is None:
                    break  # signed out (or expired) meanwhile
                now = await self.data.version()
                quiet += self.poll_s
                if now != seen:
                    seen, quiet = now, 0.0
                    await response.write(b"event: inbox\ndata: changed\n\n")
                elif quiet >= 15:
                    quiet = 0.0
                    await response.write(b": still here\n\n")
        except ConnectionResetError:
            pass  # the browser went away
        return response

    # -- chats, runs -------------------------------------------------------------------------

    async def _chats(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        q = request.query.get("q", "").strip()[:200]
        return await self._page("chats.html", session, "chats", title="Chats", chats=await self.data.chats(q), q=q)

    async def _chat(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        key = request.match_info["key"]
        try:
            chat = ChatKey.parse(key)
        except ValueError:
            return self._render("error.html", session, status=404, title="No such chat", text=f"{key!r} is not a chat.")
        strategy, origin = await self.data.routes.effective_strategy(chat)
        return await self._page(
            "chat.html",
            session,
            "chats",
            title=key,
            chat_key=key,
            runs=await self.data.chat_runs(key),
            conversation=await self.data.conversation(key),
            strategy=strategy,
            strategy_origin=origin,
        )

    async def _run(
        self, request: web.Request, session: WebUserSession, *, status: int = 200, **values: Any
    ) -> web.StreamResponse:
        run = await self.data.run(request.match_info["id"])
        if run is None:
            return self._render("error.html", session, status=404, title="No such run", text="It may have expired.")
        agents = list(self.data.routes.catalog.agents)
        response = await self._page(
            "run.html", session, "chats", title=f"Run {run.id}", run=run, agents=agents, **values
        )
        response.set_status(status)
        return response

    async def _reroute(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        """The run's message was for another agent: it becomes an example of it (as ``/route AGENT`` in the chat)."""
        form = await request.post()  # read once by the guard; aiohttp keeps it
        run = await self.data.run(request.match_info["id"])
        text = run.routed if run is not None else ""
        outcome = await self.actions.reroute(session, self.data.routes, str(form.get("agent", "")).strip(), text)
        return await self._run(request, session, status=outcome.status, flash=outcome.message, flash_ok=outcome.ok)

    # -- routing and agents ------------------------------------------------------------------

    async def _routing(
        self, request: web.Request, session: WebUserSession, *, status: int = 200, **values: Any
    ) -> web.StreamResponse:
        values.setdefault("dry_text", "")
        values.setdefault("dry_chat", "")
        response = await self._page(
            "routing.html",
            session,
            "routing",
            title="Routing",
            routing=await self.data.routing(),
            overrides=await self.data.chat_strategies(),
            strategies=STRATEGIES,
            audit=await self.data.audit(30),
            **values,
        )
        response.set_status(status)
        return response

    async def _strategy(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        form = await request.post()  # read once by the guard; aiohttp keeps it
        scope = str(form.get("scope", GLOBAL)).strip() or GLOBAL
        outcome = await self.actions.strategy(session, scope, str(form.get("strategy", "")).strip().lower())
        return await self._routing(request, session, status=outcome.status, flash=outcome.message, flash_ok=outcome.ok)

    async def _dry_run(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        form = await request.post()  # read once by the guard; aiohttp keeps it
        text, where = str(form.get("text", ""))[:4000], str(form.get("chat", "")).strip()
        try:
            chat = ChatKey.parse(where) if where else ChatKey(channel="web", chat_id="dry-run")
        except ValueError as exc:
            return await self._routing(request, session, status=422, flash=str(exc), flash_ok=False, dry_text=text)
        if not text.strip():
            return await self._routing(request, session, status=422, flash="Type a message.", flash_ok=False)
        decision = await self.data.routes.decide(chat, text)
        return await self._routing(request, session, decision=decision, dry_text=text, dry_chat=where)

    async def _agents(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        return await self._page(
            "agents.html",
            session,
            "agents",
            title="Agents",
            agents=self.health.agents(),
            errors=self.data.catalog.errors,
        )

    async def _health(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        sample: Sample = await self.health.sample()
        return await self._page(
            "health.html",
            session,
            "health",
            title="Health",
            health=self.health.status(),
            sample=sample,
            queue=sorted((f"partition {p}", f"{n} (oldest {age:.1f} s)") for p, (n, age) in sample.queue.items()),
            models=self.health.model_calls(),
            budgets=await self.health.budgets_text(),
            jobs=await self.health.jobs(),
        )
