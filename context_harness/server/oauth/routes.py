"""The authorization server's HTTP endpoints, built from the MCP SDK's handlers.

- ``GET /.well-known/oauth-protected-resource`` (and ``.../mcp``): RFC 9728 metadata, the resource
  being ``[server] public_url``;
- ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata (PKCE S256 only);
- ``GET /authorize``: the SDK's handler (client, redirect URI, scope, PKCE), then the console's page;
- ``POST /token``: codes and refresh tokens for tokens, the client's secret checked by its hash;
- ``POST /register``: RFC 7591 dynamic registration, at most ``[server.oauth]
  registrations_per_minute`` (429 past it), stored clients bounded by ``max_clients``;
- ``POST /revoke``: RFC 7009.

A ``client_id`` that is an https URL is a client ID metadata document, fetched under the bounds of
``documents``. Every refusal is logged (``Logged``).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import time
from collections import deque
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenErrorResponse, TokenHandler, TokenSuccessResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, ProtectedResourceMetadata
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from context_harness.core.face import SCOPES, digest
from context_harness.server.oauth.documents import DocumentRefused, is_document_url
from context_harness.server.oauth.provider import Provider

log = logging.getLogger("context_harness.oauth")

REGISTRATIONS_PER_MINUTE = 10
RESOURCE_METADATA = "/.well-known/oauth-protected-resource"
SERVER_METADATA = "/.well-known/oauth-authorization-server"
ENDPOINTS = ("/authorize", "/token", "/register", "/revoke")
OPEN_PATHS = (RESOURCE_METADATA, f"{RESOURCE_METADATA}/mcp", SERVER_METADATA, *ENDPOINTS)


class HashedClientAuthenticator(ClientAuthenticator):
    """The SDK's client authentication for ``/token`` and ``/revoke``, except that the stored secret is
    its SHA-256 (``Provider.get_client`` hands out the hash), so the one given is hashed to compare."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("missing client_id")
        client = await self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("unknown client_id: register the client first")
        method = client.token_endpoint_auth_method
        given: str | None = None
        if method == "client_secret_basic":
            given = _basic_secret(request.headers.get("authorization", ""), client_id)
        elif method == "client_secret_post":
            value = form.get("client_secret")
            given = value if isinstance(value, str) else None
        elif method != "none":
            raise AuthenticationError(f"unsupported token_endpoint_auth_method {method!r}")
        if method != "none":
            if not client.client_secret or not given:
                raise AuthenticationError("client_secret is required for this client")
            if not hmac.compare_digest(client.client_secret, digest(given)):
                raise AuthenticationError("wrong client_secret")
        return client


def _basic_secret(header: str, client_id: str) -> str:
    if not header.startswith("Basic "):
        raise AuthenticationError("send the client's credentials as HTTP Basic authentication")
    try:
        user, _, secret = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise AuthenticationError("malformed Basic authentication header") from None
    if unquote(user) != client_id:
        raise AuthenticationError("the client_id in Basic authentication is not the form's")
    return unquote(secret)


EXPLAINED = {  # the SDK's token-endpoint descriptions, as sentences that say what to do
    "incorrect code_verifier": "incorrect code_verifier: its S256 hash is not the code_challenge sent to "
    "/authorize; send the verifier this code was requested with",
    "authorization code does not exist": "unknown authorization code (never issued, long expired, or another "
    "client's); authorize again",
    "authorization code has expired": "this authorization code expired (codes live two minutes); authorize again",
    "refresh token does not exist": "unknown or revoked refresh token (the owner may have revoked this client); "
    "authorize again",
    "refresh token has expired": "this refresh token expired ([server.oauth] refresh_token_lifetime); "
    "authorize again",
    "redirect_uri did not match the one used when creating auth code": "redirect_uri is not the one this code "
    "was requested with at /authorize; send the same one",
}


class ExplainedTokenHandler(TokenHandler):
    """The SDK's ``/token`` handler, its terse error descriptions (``EXPLAINED``) said in full."""

    def response(self, obj: TokenSuccessResponse | TokenErrorResponse) -> Any:
        if isinstance(obj, TokenErrorResponse) and obj.error_description in EXPLAINED:
            obj = obj.model_copy(update={"error_description": EXPLAINED[obj.error_description]})
        return super().response(obj)


class RegistrationLimit:
    """At most ``per_minute`` registrations in any minute (the whole server: behind a tunnel every
    client has one address); one more is answered 429 with Retry-After."""

    def __init__(self, app: ASGIApp, per_minute: int = REGISTRATIONS_PER_MINUTE) -> None:
        self.app = app
        self.per_minute = per_minute
        self.recent: deque[float] = deque()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            now = time.monotonic()
            while self.recent and self.recent[0] < now - 60:
                self.recent.popleft()
            if len(self.recent) >= self.per_minute:
                wait = int(self.recent[0] + 60 - now) + 1
                log.warning("oauth: refused a client registration: more than %d a minute", self.per_minute)
                await JSONResponse(
                    {"error": "temporarily_unavailable", "error_description": f"too many client registrations (at "
                     f"most {self.per_minute} a minute); try again in {wait} s"},
                    status_code=429, headers={"Retry-After": str(wait), "Cache-Control": "no-store"},
                )(scope, receive, send)
                return
            self.recent.append(now)
        await self.app(scope, receive, send)


class Logged:
    """``app``, logging each refusal it answers as a warning: a 4xx with an OAuth error body, or a
    redirect carrying ``error=`` back to the client."""

    def __init__(self, app: ASGIApp, what: str) -> None:
        self.app = app
        self.what = what

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status = 0
        body = b""

        sent_to = ""

        async def keep(message: Message) -> None:
            nonlocal status, body, sent_to
            if message["type"] == "http.response.start":
                status = message["status"]
                sent_to = next((v.decode("latin-1") for k, v in message.get("headers", []) if k == b"location"), "")
            elif message["type"] == "http.response.body" and status >= 400 and len(body) < 4096:
                body += message.get("body", b"")
            await send(message)

        await self.app(scope, receive, keep)
        if status in (302, 303) and "error=" in sent_to:  # refused, and the client told so at its redirect URI
            query = parse_qs(urlsplit(sent_to).query)
            log.warning("oauth: %s request refused (%s: %s)", self.what, query.get("error", ["?"])[0],
                        query.get("error_description", [""])[0][:300])
        elif status >= 400:
            try:
                error = json.loads(body)
                detail = f"{error.get('error')}: {error.get('error_description')}"
            except (ValueError, AttributeError):
                detail = body[:200].decode("utf-8", "replace")
            log.warning("oauth: %s request refused (%d %s)", self.what, status, detail)


def server_metadata(issuer: str) -> OAuthMetadata:
    """RFC 8414 metadata; every URL built on ``issuer`` as written (no trailing slash added)."""
    return OAuthMetadata.model_validate({
        "issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
        "registration_endpoint": f"{issuer}/register", "revocation_endpoint": f"{issuer}/revoke",
        "scopes_supported": list(SCOPES), "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "code_challenge_methods_supported": ["S256"], "client_id_metadata_document_supported": True,
    })


def resource_metadata(resource: str) -> ProtectedResourceMetadata:
    return ProtectedResourceMetadata.model_validate({
        "resource": resource, "authorization_servers": [resource], "scopes_supported": list(SCOPES),
        "bearer_methods_supported": ["header"], "resource_name": "context-harness"})


def oauth_routes(provider: Provider) -> list[Route]:
    """The authorization server's routes (see the module docstring)."""
    issuer = provider.issuer
    authenticator = HashedClientAuthenticator(provider)  # type: ignore[arg-type]
    registration = RegistrationHandler(provider, ClientRegistrationOptions(  # type: ignore[arg-type]
        enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES)))
    server_doc = server_metadata(issuer).model_dump(mode="json", exclude_none=True)
    resource_doc = resource_metadata(provider.resource).model_dump(mode="json", exclude_none=True)

    def document(doc: dict[str, Any]) -> Any:
        async def handle(request: Request) -> Response:
            return JSONResponse(doc, headers={"Cache-Control": "public, max-age=3600"})
        return cors_middleware(handle, ["GET", "OPTIONS"])

    async def authorize(request: Request) -> Response:
        params = request.query_params if request.method == "GET" else await request.form()
        client_id = params.get("client_id")
        if isinstance(client_id, str) and is_document_url(client_id):  # say why a document is refused
            try:
                await provider.documents.client(client_id)
            except DocumentRefused as exc:
                log.warning("oauth: refused the client document %r: %s", client_id[:200], exc)
                return JSONResponse({"error": "invalid_request", "error_description": f"the client document "
                                     f"{client_id[:200]} is refused: {exc}"}, status_code=400,
                                    headers={"Cache-Control": "no-store"})
        return await AuthorizationHandler(provider).handle(request)  # type: ignore[arg-type]

    return [
        Route(RESOURCE_METADATA, document(resource_doc), methods=["GET", "OPTIONS"]),
        Route(f"{RESOURCE_METADATA}/mcp", document(resource_doc), methods=["GET", "OPTIONS"]),
        Route(SERVER_METADATA, document(server_doc), methods=["GET", "OPTIONS"]),
        Route("/authorize", Logged(_endpoint(authorize), "authorization"), methods=["GET", "POST"]),
        Route("/token", Logged(cors_middleware(ExplainedTokenHandler(provider, authenticator).handle,  # type: ignore[arg-type]
                                               ["POST", "OPTIONS"]), "token"), methods=["POST", "OPTIONS"]),
        Route("/register", RegistrationLimit(Logged(cors_middleware(registration.handle, ["POST", "OPTIONS"]),
                                                    "registration"), provider.settings.registrations_per_minute),
              methods=["POST", "OPTIONS"]),
        Route("/revoke", Logged(cors_middleware(RevocationHandler(provider, authenticator).handle,  # type: ignore[arg-type]
                                                ["POST", "OPTIONS"]), "revocation"), methods=["POST", "OPTIONS"]),
    ]


def _endpoint(handler: Any) -> ASGIApp:
    return request_response(handler)


__all__ = ["ENDPOINTS", "OPEN_PATHS", "RESOURCE_METADATA", "SERVER_METADATA", "HashedClientAuthenticator",
           "RegistrationLimit", "Logged", "oauth_routes", "resource_metadata", "server_metadata"]
