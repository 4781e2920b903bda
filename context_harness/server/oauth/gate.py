"""The protected resource's side: who may call, and with which scopes.

``OAuthGate`` takes the place of the static-token check when ``[server.oauth]`` is on. A request
with ``[server] auth_token`` as its bearer has every scope (scripts keep working); one with an OAuth
access token has the scopes the owner granted, and must have ``read``; any other gets 401 with
``WWW-Authenticate: Bearer resource_metadata="<public_url>/.well-known/oauth-protected-resource"``
(RFC 9728), which is how an MCP client discovers where to sign in. The granted scopes ride in the
ASGI scope (``GRANTED``); ``scopes.check_tool`` refuses a tool call they do not cover, naming the scope.
"""

from __future__ import annotations

import hmac
import logging

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from context_harness.errors import InsufficientScope, InvalidToken, Unauthorized
from context_harness.server.guards import error_response
from context_harness.server.oauth.provider import Provider
from context_harness.server.oauth.routes import RESOURCE_METADATA
from context_harness.server.oauth.scopes import ALL_SCOPES, GRANTED, check_tool, granted_scopes

log = logging.getLogger("context_harness.oauth")

class OAuthGate:
    """The bearer check of every route but ``open_paths`` and ``own_auth`` prefixes (the console)."""

    def __init__(self, app: ASGIApp, provider: Provider, token: str | None, open_paths: tuple[str, ...],
                 own_auth: tuple[str, ...] = ()) -> None:
        self.app = app
        self.provider = provider
        self.token = token.encode() if token else None
        self.open_paths = open_paths
        self.own_auth = own_auth
        self.metadata_url = f"{provider.resource}{RESOURCE_METADATA}"

    def _open(self, scope: Scope) -> bool:
        path = scope["path"]
        return (scope["method"] == "OPTIONS" or path in self.open_paths
                or any(path == p or path.startswith(p + "/") for p in self.own_auth))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope):
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"authorization"), "")
        kind, _, value = header.partition(" ")
        value = value.strip()
        if kind.lower() != "bearer" or not value:
            await self._refuse(scope, receive, send, None)
            return
        if self.token is not None and hmac.compare_digest(value.encode(), self.token):
            scope[GRANTED] = ALL_SCOPES
            await self.app(scope, receive, send)
            return
        verdict = await self.provider.verify(value)
        if not isinstance(verdict, AccessToken):
            log.warning("oauth: refused %s %s: %s", scope["method"], scope["path"][:100], verdict.reason)
            await self._refuse(scope, receive, send, verdict.reason)
            return
        if "read" not in verdict.scopes:
            await self._refuse(scope, receive, send, "this token lacks the scope 'read' that every request needs",
                               insufficient=True)
            return
        scope["user"] = AuthenticatedUser(verdict)
        scope["auth"] = AuthCredentials(verdict.scopes)
        scope[GRANTED] = frozenset(verdict.scopes)
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, reason: str | None,
                      insufficient: bool = False) -> None:
        await refuse(self.metadata_url, reason, insufficient)(scope, receive, send)


def refuse(metadata_url: str, reason: str | None, insufficient: bool = False) -> ASGIApp:
    """401 (403 for a missing scope) with the RFC 6750/9728 ``WWW-Authenticate`` challenge naming the
    protected-resource metadata at ``metadata_url``; ``reason`` None: no token was sent."""
    challenge = f'Bearer resource_metadata="{metadata_url}"'
    if insufficient:
        error: Unauthorized | InsufficientScope = InsufficientScope(str(reason))
        challenge += f', error="insufficient_scope", scope="read", error_description="{reason}"'
    elif reason is not None:
        error = InvalidToken(reason)
        challenge += f', error="invalid_token", error_description="{reason}"'
    else:
        error = Unauthorized("this server needs a bearer token: an OAuth access token (MCP clients sign in "
                             f"through {metadata_url}) or a [server] auth_token")
    return error_response(error, headers={"WWW-Authenticate": challenge})


__all__ = ["ALL_SCOPES", "GRANTED", "OAuthGate", "check_tool", "granted_scopes", "refuse"]
