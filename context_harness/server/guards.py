"""The HTTP guards (pure ASGI), in the order every request meets them: message framing
(``Content-Length`` with ``Transfer-Encoding``), Host/Origin (the DNS-rebinding defence, and writes
only from the server's own origin), then the body size limit and the bearer token, then JSON bodies
for writes. CORS, when ``[server] cors_origins`` lists origins, sits after Host/Origin (Starlette's
middleware). Each refusal is a ``HarnessError`` rendered through the error table."""

from __future__ import annotations

import hmac
import logging

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from context_harness.common.validation import plain_int
from context_harness.config import ServerConfig
from context_harness.errors import (
    BadRequest,
    BodyTooLarge,
    Forbidden,
    HarnessError,
    MisdirectedHost,
    Unauthorized,
    UnsupportedMediaType,
    outcome,
)

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::", "[::]", "")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
DEFAULT_PORTS = {"http": "80", "https": "443"}


def error_response(error: HarnessError, headers: dict[str, str] | None = None) -> JSONResponse:
    """``{"error": {"code", "message"}}`` with the HTTP status from the error table."""
    return JSONResponse(error.to_dict(), status_code=outcome(error).http_status, headers=headers)


def split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` -> (host, port); IPv6 hosts keep their brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    return (host, port) if sep else (value, None)


class HostOriginGuard:
    """Reject a foreign ``Host`` (421) or ``Origin`` (403): the DNS-rebinding defence.

    Allowed hosts: loopback names on any port, the bind address when it is not a wildcard, and
    ``[server] allowed_hosts`` (``"name"`` or ``"name:*"`` = any port, ``"name:port"`` exact, ``"*"`` = any).
    Allowed origins: none sent, ``[server] allowed_origins`` and ``cors_origins``, the server's own
    (host and port those of the request's ``Host``), and for reads (GET, HEAD, OPTIONS) any loopback
    origin. A write (POST, PUT, PATCH, DELETE) from another loopback origin, a page on another local
    port, is refused: that page could otherwise change notes behind the user's back.
    """

    def __init__(self, app: ASGIApp, settings: ServerConfig, bind_host: str | None = None) -> None:
        self.app = app
        self.any_host = "*" in settings.allowed_hosts
        self.host_names = {h for h in LOOPBACK_HOSTS}
        self.host_exact: set[str] = set()
        for entry in settings.allowed_hosts:
            host, port = split_host(entry)
            if port in (None, "*"):
                self.host_names.add(host)
            else:
                self.host_exact.add(f"{host}:{port}")
        if bind_host and bind_host not in WILDCARD_BINDS:
            self.host_names.add(f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host)
        self.any_origin = "*" in settings.allowed_origins
        self.origins = {o.rstrip("/").lower() for o in [*settings.allowed_origins, *settings.cors_origins]}

    def host_ok(self, value: str | None, named: bool = False) -> bool:
        """Whether this server answers for ``Host: value``; ``named``: by name, not by ``"*"``."""
        if self.any_host and not named:
            return True
        if not value:
            return False
        host, port = split_host(value)
        return host in self.host_names or f"{host}:{port}" in self.host_exact

    def origin_ok(self, value: str | None, host: str | None = None, write: bool = False) -> bool:
        """Whether a request with ``Origin: value`` for ``Host: host`` may go on; ``write``: it is a
        write, which only the server's own origin and the listed ones may send."""
        if value is None or self.any_origin:
            return True
        origin = value.rstrip("/").lower()
        if origin in self.origins:
            return True
        scheme, sep, rest = origin.partition("://")
        if not sep or scheme not in DEFAULT_PORTS:
            return False
        origin_host, origin_port = split_host(rest)
        if self.host_ok(host, named=True):  # not a Host only "*" lets in: a rebound name would be "own"
            assert host is not None
            own_host, own_port = split_host(host)
            default = DEFAULT_PORTS[scheme]  # the scheme is not compared: a TLS proxy may stand in front
            if (origin_host, origin_port or default) == (own_host, own_port or default):
                return True
        return not write and origin_host in LOOPBACK_HOSTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if not self.host_ok(headers.get("host")):
            log.warning("rejected a request for Host %r (not in [server] allowed_hosts)", headers.get("host"))
            await error_response(MisdirectedHost("this Host is not allowed; add it to [server] allowed_hosts"))(
                scope, receive, send)
            return
        origin, host, write = headers.get("origin"), headers.get("host"), scope["method"] not in SAFE_METHODS
        if not self.origin_ok(origin, host, write):
            log.warning("rejected a %s from Origin %r (not in [server] allowed_origins)", scope["method"], origin)
            error = Forbidden("this Origin is not allowed; add it to [server] allowed_origins")
            if write and self.origin_ok(origin, host):
                error = Forbidden(f"a {scope['method']} from another origin ({str(origin)[:100]}) is refused: this "
                                  "server takes writes from its own pages only; add the origin to [server] "
                                  "allowed_origins to allow it")
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimitAndAuth:
    """Enforce ``[server] max_body_bytes`` and, when ``auth_token`` is set, a bearer token on
    every route except ``/health`` (and CORS preflights, which never carry credentials)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, token: str | None,
                 open_paths: tuple[str, ...] = ("/health",), own_auth: tuple[str, ...] = ()) -> None:
        self.app = app
        self.own_auth = own_auth  # path prefixes whose app checks the token itself (the console's cookie)
        self.max_body_bytes = max_body_bytes
        self.token = token.encode() if token else None
        self.open_paths = open_paths

    def _authorized(self, headers: dict[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token or b"")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if (self.token is not None and scope["path"] not in self.open_paths and scope["method"] != "OPTIONS"
                and not any(scope["path"] == p or scope["path"].startswith(p + "/") for p in self.own_auth)):
            if not self._authorized(headers):
                response = error_response(
                    Unauthorized("missing or wrong bearer token (send Authorization: Bearer <[server] auth_token>)"),
                    headers={"WWW-Authenticate": 'Bearer realm="context-harness"'})
                await response(scope, receive, send)
                return
        too_large = error_response(BodyTooLarge(f"request body is larger than {self.max_body_bytes} bytes "
                                                "([server] max_body_bytes)"))
        declared = plain_int(headers.get("content-length"))
        if declared is not None and declared > self.max_body_bytes:
            await too_large(scope, receive, send)
            return
        received = 0
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise BodyLimitExceeded()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyLimitExceeded:
            if not response_started:
                await too_large(scope, receive, send)


class JsonBodies:
    """Refuse a POST, PUT or PATCH whose ``Content-Type`` is not ``application/json`` with 415: the
    types a page on another origin may send without a CORS preflight (``text/plain``, forms, none) never
    reach a route. Paths under ``form_paths`` (the console, whose forms carry a CSRF token) are left be."""

    def __init__(self, app: ASGIApp, form_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["method"] in BODY_METHODS
                and not any(scope["path"] == p or scope["path"].startswith(p + "/") for p in self.form_paths)):
            declared = _headers(scope).get("content-type", "")
            if declared.partition(";")[0].strip().lower() != "application/json":
                shown = f"Content-Type {declared[:60]!r}" if declared else "no Content-Type"
                await error_response(UnsupportedMediaType(
                    f"{scope['method']} {scope['path'][:100]} with {shown}: send the body as JSON with "
                    "Content-Type: application/json"))(scope, receive, send)
                return
        await self.app(scope, receive, send)


class FramingGuard:
    """Refuse a request that carries both ``Content-Length`` and ``Transfer-Encoding`` (a request-smuggling
    shape) with 400 and close its connection, as RFC 9112 §6.3 requires."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope.get("headers", [])}
            if b"content-length" in names and b"transfer-encoding" in names:
                await error_response(BadRequest("send either Content-Length or Transfer-Encoding, not both"),
                                     headers={"Connection": "close"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyLimitExceeded(Exception):
    """Raised inside ``receive`` when a streamed body passes the limit (answered with 413)."""


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


__all__ = ["LOOPBACK_HOSTS", "BodyLimitAndAuth", "BodyLimitExceeded", "FramingGuard", "HostOriginGuard", "JsonBodies",
           "error_response", "split_host"]
