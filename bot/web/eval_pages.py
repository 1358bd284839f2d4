"""The console's Evals pages over HTTP (signed in, a viewer too): the runs, one run with its case × model grid, a
case side by side (two models of a run, or one model in two runs of a suite), and run against run.

``/evals/{id}/side?case=C&left=A&right=B``: case C played by models A and B of the run;
``/evals/{id}/vs?run=OTHER``: the run against another run of its suite (the earlier one the baseline), and with
``&case=C&model=M`` that case side by side.  Everything shown is read through the redaction step
(:func:`bot.evals.store.load_run`) and escaped by the templates.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from bot.http import HttpServer
from bot.web.auth import WebUserSession
from bot.web.data import ConsoleData

RUN_ID = re.compile(r"^[A-Za-z0-9]{1,32}$")
NAME_CHARS = 300
"""The longest case id or model name a query may give."""


Handler = Callable[[web.Request, WebUserSession], Awaitable[web.StreamResponse]]
Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Console(Protocol):
    """What the pages use of the console (:class:`bot.web.console.WebConsole`): its guard, reads and pages."""

    root: str
    data: ConsoleData

    def _viewing(self, handler: Handler) -> Route: ...

    async def _page(self, name: str, session: WebUserSession, page: str, **values: Any) -> web.Response: ...

    def _render(
        self, template: str, session: WebUserSession | None, *, status: int = 200, **values: Any
    ) -> web.Response: ...


class EvalPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    def mount(self, http: HttpServer) -> None:
        r, add, view = self.console.root, http.app.router, self.console._viewing
        ident = "{id:[A-Za-z0-9]{1,32}}"
        add.add_get(f"{r}/evals", view(self._evals))
        add.add_get(f"{r}/evals/{ident}", view(self._eval_run))
        add.add_get(f"{r}/evals/{ident}/side", view(self._side))
        add.add_get(f"{r}/evals/{ident}/vs", view(self._versus))

    def _missing(self, session: WebUserSession, what: str, text: str) -> web.StreamResponse:
        return self.console._render("error.html", session, status=404, title=what, text=text)

    async def _evals(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        from bot.web.evals import overview

        runs, trends = await overview(self.console.data.evals)
        return await self.console._page("evals.html", session, "evals", title="Evals", runs=runs, trends=trends)

    async def _eval_run(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        from bot.web.evals import grid, others, run_view

        repo = self.console.data.evals
        found = await run_view(repo, request.match_info["id"])
        if found is None:
            return self._missing(session, "No such eval run", "It is not stored.")
        run, cases = found
        models, rows = grid(run)
        return await self.console._page(
            "eval_run.html",
            session,
            "evals",
            title=f"Eval {run.suite}",
            run=run,
            totals=run.totals,
            by_model=run.by_model(),
            cases=cases,
            grid_models=models,
            grid=rows,
            others=await others(repo, run),
        )

    async def _side(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        from bot.web.evals import models_side

        case, left, right = (request.query.get(k, "")[:NAME_CHARS] for k in ("case", "left", "right"))
        found = await models_side(self.console.data.evals, request.match_info["id"], case, left, right)
        if found is None:
            return self._missing(session, "Nothing to compare", "No such run, case or pair of models.")
        run, row = found
        return await self.console._page(
            "eval_side.html",
            session,
            "evals",
            title=f"{row.case}: {left} vs {right}",
            run=run,
            row=row,
            left_label=left,
            right_label=right,
            back=f"{self.console.root}/evals/{run.id}",
        )

    async def _versus(self, request: web.Request, session: WebUserSession) -> web.StreamResponse:
        from bot.evals.compare import short
        from bot.web.evals import versus

        other = request.query.get("run", "")
        found = await versus(self.console.data.evals, request.match_info["id"], other) if RUN_ID.match(other) else None
        if found is None:
            return self._missing(session, "Nothing to compare", "No such run of this suite.")
        before, after, comparison = found
        here = f"{self.console.root}/evals/{request.match_info['id']}/vs?run={other}"
        labels = {"left_label": f"run {short(before.id)}", "right_label": f"run {short(after.id)}"}
        if "case" in request.query:
            case, model = (request.query.get(k, "")[:NAME_CHARS] for k in ("case", "model"))
            row = next((r for r in comparison.rows if (r.case, r.left_model) == (case, model)), None)
            if row is None:
                return self._missing(session, "Nothing to compare", "No such case in these runs.")
            return await self.console._page(
                "eval_side.html", session, "evals", title=f"{case} [{model}]", run=after, row=row, back=here, **labels
            )
        return await self.console._page(
            "eval_versus.html",
            session,
            "evals",
            title=f"Eval {after.suite}: run vs run",
            before=before,
            after=after,
            comparison=comparison,
            here=here,
            **labels,
        )
