"""The OAuth pages of the console (``[server.oauth]``): the authorization page where the owner, logged
in with the console login, approves a client with scopes or refuses it, and the list of authorized
clients with a revoke button.

Both refuse to be framed (``X-Frame-Options: DENY``, ``frame-ancestors 'none'``: the console's
headers), and every answer is a POST carrying the session's CSRF token. They work on a read-only
console too (the PostgreSQL backend): a grant changes no document. The authorization server itself
is the server's (``server.oauth``); it reaches these pages through the ``Approvals`` protocol.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.common import timestamps
from context_harness.console.pages import Pages

# form-action also governs where the approval's redirect may go: the page names the client's origin
APPROVAL_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                "connect-src 'self'; form-action 'self' {origin}; frame-ancestors 'none'; base-uri 'none'")


class Approvals(Protocol):
    """What the authorization server offers the console."""

    def pending(self, request_id: str) -> dict[str, Any] | None: ...
    async def approve(self, request_id: str, scopes: list[str]) -> str | None: ...
    def deny(self, request_id: str) -> str | None: ...
    async def clients(self) -> list[Any]: ...
    async def revoke(self, client_id: str) -> int: ...


class OAuthPages:
    def __init__(self, pages: Pages, approvals: Approvals) -> None:
        self.pages = pages
        self.approvals = approvals

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/oauth/authorize", self.authorize, methods=["GET", "POST"]),
            Route("/oauth/clients", self.clients, methods=["GET"]),
            Route("/oauth/revoke", self.revoke, methods=["POST"]),
        ]

    async def _refused(self, request: Request) -> Response | None:
        """A response refusing this POST (not logged in, a stale CSRF token), or None."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.render(request, "message.html", 401, title="Log in first",
                                     message="Approving or revoking a client needs you to log in with the server's "
                                     "token.")
        form = await request.form()
        given = form.get("csrf")
        if not self.pages.sessions.csrf_ok(request, given if isinstance(given, str) else None):
            return self.pages.render(request, "message.html", 403, title="Refused",
                                     message="The form's CSRF token is missing or stale: reload the page and try "
                                     "again.")
        return None

    async def authorize(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        if request.method == "POST":
            return await self._answer(request)
        request_id = request.query_params.get("request", "")
        shown = self.approvals.pending(request_id)
        if shown is None:
            return self.pages.render(request, "message.html", 404, title="No such request",
                                     message="This authorization request is unknown or expired (the owner has ten "
                                     "minutes to answer one): start the connection from the client again.")
        response = self.pages.render(request, "oauth_authorize.html", request_id=request_id, shown=shown)
        response.headers["Content-Security-Policy"] = APPROVAL_CSP.format(origin=shown["redirect_origin"])
        return response

    async def _answer(self, request: Request) -> Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        form = await request.form()
        request_id = str(form.get("request") or "")
        if form.get("decision") == "approve":
            scopes = [str(value) for value in form.getlist("scope")]
            target = await self.approvals.approve(request_id, scopes)
        else:
            target = self.approvals.deny(request_id)
        if target is None:
            return self.pages.render(request, "message.html", 404, title="No such request",
                                     message="This authorization request is unknown, expired or already answered: "
                                     "start the connection from the client again.")
        return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})

    async def clients(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        rows = await self.approvals.clients()
        done = request.query_params.get("revoked")
        return self.pages.render(request, "oauth_clients.html", rows=rows, stamp=_stamp,
                                 done=f"revoked {done[:100]}" if done else None)

    async def revoke(self, request: Request) -> Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        form = await request.form()
        client_id = str(form.get("client_id") or "")
        await self.approvals.revoke(client_id)
        return RedirectResponse(f"/ui/oauth/clients?revoked={quote(client_id, safe='')}", status_code=303)


def _stamp(seconds: float) -> str:
    return str(timestamps.to_iso(timestamps.from_unix(seconds)))


__all__ = ["APPROVAL_CSP", "Approvals", "OAuthPages"]
