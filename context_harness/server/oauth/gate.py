"""The protected resource's side: who may call, and with which scopes.

``OAuthGate`` takes the place of the static-token check when ``[server.oauth]`` is on. A request
with ``[server] auth_token`` as its bearer has every scope (scripts keep working); one with an OAuth
access token has the scopes the owner granted, and must have ``read``; any other gets 401 with
``WWW-Authenticate: Bearer resource_metadata="<public_url>/.well-known/oauth-protected-resource"``
(RFC 9728), which is how an MCP client discovers where to sign in. The granted scopes ride in the
ASGI scope (``GRANTED``); ``check_tool`` refuses a tool call they do not cover, naming the scope.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from context_harness.core.face import SCOPES, Harness, required_scope
from context_harness.errors import InsufficientScope, InvalidToken, Unauthorized
from context_harness.server.guards import error_response
from context_harness.server.oauth.provider import Provider
from context_harness.server.oauth.routes import RESOURCE_METADATA

log = logging.getLogger("context_harness.oauth")

GRANTED = "context_harness.scopes"  # the ASGI scope key holding the caller's scopes (absent: no OAuth)
ALL_SCOPES = frozenset(SCOPES)


def granted_scopes(scope: Mapping[str, Any]) -> frozenset[str] | None:
    """The scopes of the request behind ``scope`` (an ASGI scope), or None when OAuth is off."""
    value = scope.get(GRANTED)
    return value if isinstance(value, frozenset) else None


def check_tool(harness: Harness, name: str, agent: str | None, scope: Mapping[str, Any] | None,
               profile: str | None = None) -> None:
    """Raise ``InsufficientScope`` when the request behind ``scope`` may not call tool ``name`` (of
    ``profile``'s tools when given: the tool set the call itself resolves ``name`` in)."""
    granted = granted_scopes(scope) if scope is not None else None
    if granted is None or granted >= ALL_SCOPES:
        return
    offered = harness.tools(agent, profile) if profile else harness.tools(agent)
    tool = next((tool for tool in offered if tool.name == name), None)
    if tool is None:
        return  # the call itself answers unknown_tool
    needed = required_scope(tool)
    if needed not in granted:
        log.warning("oauth: refused %s to a token with scopes %s (needs %r)", name, " ".join(sorted(granted)), needed)
        raise InsufficientScope(f"calling {name} needs the OAuth scope {needed!r} ({SCOPES[needed]}); this token was "
                                f"granted {' '.join(sorted(granted))}: reconnect the client and approve {needed!r}",
                                needed)


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
        """401 (403 for a missing scope) with the RFC 6750/9728 ``WWW-Authenticate`` challenge."""
        challenge = f'Bearer resource_metadata="{self.metadata_url}"'
        if insufficient:
            error: Unauthorized | InsufficientScope = InsufficientScope(str(reason))
            challenge += f', error="insufficient_scope", scope="read", error_description="{reason}"'
        elif reason is not None:
            error = InvalidToken(reason)
            challenge += f', error="invalid_token", error_description="{reason}"'
        else:
            error = Unauthorized("this server needs a bearer token: an OAuth access token (MCP clients sign in "
                                 f"through {self.metadata_url}) or [server] auth_token")
        await error_response(error, headers={"WWW-Authenticate": challenge})(scope, receive, send)


__all__ = ["ALL_SCOPES", "GRANTED", "OAuthGate", "check_tool", "granted_scopes"]
