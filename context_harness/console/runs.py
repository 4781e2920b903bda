"""The console's agent runs (``/ui/runs``): the runs' records, newest first; a form that starts a run in
the background of the serving knowledge base (``Harness.start_agent_run``); a run's page, which
follows it while it goes (htmx polls its steps every 2 s) and asks the person at the page to approve
each write (yes / always for this run / no). A write no one answers within ``APPROVAL_SECONDS`` is
refused, and the run goes on. The form names the call it answers (the request's id and the digest of
its tool and arguments): it answers that call once, and a replayed or stale form approves nothing.
Starting a run and answering approvals are writes: a logged-in session, the CSRF token, and a
console that is not read-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.console.pages import Pages, error_message
from context_harness.core.face import Approval, Approver, RunRequest, new_run_id
from context_harness.errors import HarnessError, NotFound

APPROVAL_SECONDS = 600.0  # a write waits this long for the page's answer, then is refused
ANSWERS = ("yes", "always", "no")


@dataclass
class Pending:
    """A write waiting for the person at the run's page."""

    approval: Approval
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: str = "no"


class RunPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.harness = pages.harness
        self.pending: dict[str, Pending] = {}  # run id -> the write it waits on
        self.started: set[str] = set()  # runs started here (shown as starting before their first step)

    def routes(self) -> list[BaseRoute]:
        return [Route("/runs", self.listing, methods=["GET", "POST"]),
                Route("/runs/{run_id}", self.show, methods=["GET"]),
                Route("/runs/{run_id}/steps", self.steps, methods=["GET"]),
                Route("/runs/{run_id}/approve", self.approve, methods=["POST"])]

    async def listing(self, request: Request) -> Response:
        if request.method == "POST":
            return await self._start(request)
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        return await self._listing(request)

    async def _listing(self, request: Request, status: int = 200, error: str | None = None,
                       given: dict[str, str] | None = None) -> Response:
        runs = await self.harness.agent_runs(50)
        return self.pages.render(request, "runs.html", status, runs=runs, agents=self.harness.agents(),
                                 models=sorted(self.harness.config.models), error=error, given=given or {})

    async def _start(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        form = await request.form()
        given = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf"}
        run_id = new_run_id()
        run = RunRequest(agent=given.get("agent", ""), task=given.get("task", ""), id=run_id,
                         model=given.get("model") or None, yes=given.get("yes") == "on")
        try:
            await self.harness.start_agent_run(run, approver=self._approver(run_id))
        except HarnessError as exc:
            return await self._listing(request, 400, error_message(exc), given)
        self.started.add(run_id)
        return RedirectResponse(f"/ui/runs/{run_id}", status_code=303)

    def _approver(self, run_id: str) -> Approver:
        async def ask(approval: Approval) -> str:
            pending = Pending(approval)
            self.pending[run_id] = pending
            try:
                with anyio.move_on_after(APPROVAL_SECONDS):
                    await pending.answered.wait()
            finally:
                self.pending.pop(run_id, None)
            return pending.answer

        return ask

    async def show(self, request: Request) -> Response:
        return await self._page(request, "run.html")

    async def steps(self, request: Request) -> Response:
        return await self._page(request, "run_steps.html")

    async def _page(self, request: Request, template: str) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        run_id = request.path_params["run_id"]
        try:
            record: dict[str, Any] | None = await self.harness.agent_run_record(run_id)
        except NotFound as exc:
            if run_id not in self.started:
                return self.pages.render(request, "message.html", 404, title="No such run",
                                         message=error_message(exc))
            record = None  # started here, before its first step
        except HarnessError as exc:
            return self.pages.render(request, "message.html", 400, title="Run", message=error_message(exc))
        pending = self.pending.get(run_id)
        return self.pages.render(request, template, run_id=run_id, record=record,
                                 pending=pending.approval if pending else None)

    async def approve(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        run_id = request.path_params["run_id"]
        form = await request.form()
        answer = form.get("answer")
        if answer not in ANSWERS:
            return self.pages.render(request, "message.html", 400, title="Approval",
                                     message="the answer must be yes, always or no; nothing was approved")
        pending = self.pending.get(run_id)
        if pending is None or pending.answered.is_set() or not pending.approval.answers(form.get("call"),
                                                                                         form.get("digest")):
            return self.pages.render(request, "message.html", 409, title="Approval not taken", message=(
                "this answer was for a call that is no longer waiting (answered already, refused after waiting, "
                "or another call): nothing was approved. The run's page shows the call waiting now, if any."),
                back=f"/ui/runs/{run_id}")
        pending.answer = str(answer)
        pending.answered.set()
        return RedirectResponse(f"/ui/runs/{run_id}", status_code=303)


__all__ = ["RunPages"]
