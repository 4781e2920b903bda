"""The HTTP guards (pure ASGI), in the order every request meets them: message framing
(``Content-Length`` with ``Transfer-Encoding``), Host/Origin (the DNS-rebinding defence, and writes
only from the server's own origin), then the body size limit and the bearer token, then JSON bodies
for writes. CORS, when ``[server] cors_origins`` lists origins, sits after Host/Origin (Starlette's
middleware). Each refusal is a ``HarnessError`` rendered through the error table."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
from urllib.parse import urlsplit

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
    """``host[:port]`` -> (host, port); IPv6 hosts keep their brackets. Lenient: for ``--bind`` and
    ``[server] allowed_hosts``; a request's ``Host`` goes through ``parse_host``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    return (host, port) if sep else (value, None)


_LABEL = "[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(f"{_LABEL}(?:\\.{_LABEL})*")  # a DNS name or a dotted IPv4 address, lowercased
_PORT = re.compile("[0-9]{1,5}")


def parse_host(value: str) -> tuple[str, str | None] | None:
    """``Host: value`` as (host, port), or None when it is not one host and an optional port.

    The host is a name or IPv4 address (lowercased: names compare case-insensitively) or an IPv6
    address in brackets (written in its shortest form, so ``[0:0::1]`` is ``[::1]``); the port is
    1-5 digits up to 65535. Nothing else: no user, path, query, fragment, list, space or zone id."""
    text = value.lower()
    if text.startswith("["):
        end = text.find("]")
        rest = text[end + 1:] if end != -1 else ""
        try:
            host = f"[{ipaddress.IPv6Address(text[1:end]).compressed}]" if end != -1 and "%" not in text else None
        except ValueError:
            host = None
    else:
        name = text.partition(":")[0]
        rest = text[len(name):]
        host = name if len(name) <= 253 and _NAME.fullmatch(name) else None
    if host is None:
        return None
    if not rest:
        return host, None
    port = rest[1:]
    if rest[0] != ":" or not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    return host, str(int(port))


def parse_origin(value: str) -> tuple[str, str, str] | None:
    """``Origin: value`` as (scheme, host, port), the port filled in from the scheme; None unless it is
    ``http`` or ``https``, ``://``, a host as ``parse_host`` takes it and an optional port (and at most a
    trailing ``/``): the form a browser sends."""
    scheme, sep, rest = value.partition("://")
    scheme = scheme.lower()
    parsed = parse_host(rest.removesuffix("/")) if sep and scheme in DEFAULT_PORTS else None
    if parsed is None:
        return None
    return scheme, parsed[0], parsed[1] or DEFAULT_PORTS[scheme]


class HostOriginGuard:
    """Reject a malformed ``Host`` (400), a foreign one (421) or a foreign ``Origin`` (403): the
    DNS-rebinding defence, one check for every route (``/mcp``, the REST shim, the console, ``/health``).

    ``Host`` must be one host and an optional port (``parse_host``); names compare case-insensitively.
    Allowed hosts: loopback names on any port, the bind address when it is not a wildcard, and
    ``[server] allowed_hosts`` (``"name"`` or ``"name:*"`` = any port, ``"name:port"`` exact, ``"*"`` = any).
    Allowed origins: none sent, ``[server] allowed_origins`` and ``cors_origins``, the server's own
    (the scheme it serves, and host and port those of the request's ``Host``), and for reads (GET,
    HEAD, OPTIONS) any loopback origin. A write (POST, PUT, PATCH, DELETE) from another origin, a page
    on another local port or scheme, is refused: that page could otherwise change notes behind the
    user's back.
    """

    def __init__(self, app: ASGIApp, settings: ServerConfig, bind_host: str | None = None,
                 any_origin_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.any_origin_paths = any_origin_paths  # OAuth endpoints: no cookies, called from any origin
        self.any_host = "*" in settings.allowed_hosts
        self.host_names = {h for h in LOOPBACK_HOSTS}
        self.host_exact: set[tuple[str, str]] = set()
        for entry in settings.allowed_hosts:
            host, port = split_host(entry)
            host = _canonical(host)
            if port in (None, "*"):
                self.host_names.add(host)
            elif port.isdigit():
                self.host_exact.add((host, str(int(port))))
        if bind_host and bind_host not in WILDCARD_BINDS:
            self.host_names.add(_canonical(f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[")
                                           else bind_host))
        self.any_origin = "*" in settings.allowed_origins
        self.origins = {o.rstrip("/").lower() for o in [*settings.allowed_origins, *settings.cors_origins]}
        if settings.public_url:  # the server's own address as clients see it (behind a tunnel or proxy)
            public = urlsplit(settings.public_url)
            self.origins.add(f"{public.scheme}://{public.netloc}".lower())
            parsed = parse_host(public.netloc)
            if parsed is not None:  # Host exactly as the URL has it (with its port, or none)
                self.host_exact.add((parsed[0], parsed[1] or ""))

    def host_ok(self, value: str | None, named: bool = False) -> bool:
        """Whether this server answers for ``Host: value`` (well formed: see ``parse_host``);
        ``named``: by name, not by ``"*"``."""
        if not value:
            return self.any_host and not named
        parsed = parse_host(value)
        if parsed is None:
            return False
        if self.any_host and not named:
            return True
        host, port = parsed
        return host in self.host_names or (host, port or "") in self.host_exact

    def origin_ok(self, value: str | None, host: str | None = None, write: bool = False,
                  scheme: str = "http") -> bool:
        """Whether a request with ``Origin: value`` for ``Host: host``, served over ``scheme``, may go on;
        ``write``: it is a write, which only the server's own origin and the listed ones may send."""
        if value is None or self.any_origin:
            return True
        if value.rstrip("/").lower() in self.origins:
            return True
        origin = parse_origin(value)
        if origin is None:
            return False
        own = parse_host(host) if host and self.host_ok(host, named=True) else None
        # not a Host only "*" lets in: a rebound name would be "own"
        if own is not None and origin == (scheme, own[0], own[1] or DEFAULT_PORTS.get(scheme, "")):
            return True
        return not write and origin[1] in LOOPBACK_HOSTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        if host is not None and parse_host(host) is None:
            log.warning("rejected a request with a malformed Host %r", host[:200])
            await error_response(BadRequest("malformed Host header: send one host (a name, an IPv4 address or an "
                                            "[IPv6] address) and an optional :port, nothing else"))(
                scope, receive, send)
            return
        if not self.host_ok(host):
            log.warning("rejected a request for Host %r (not in [server] allowed_hosts)", host)
            await error_response(MisdirectedHost("this Host is not allowed; add it to [server] allowed_hosts"))(
                scope, receive, send)
            return
        origin, write = headers.get("origin"), scope["method"] not in SAFE_METHODS
        if scope["path"] in self.any_origin_paths:
            origin = None
        scheme = str(scope.get("scheme") or "http")
        if not self.origin_ok(origin, host, write, scheme):
            log.warning("rejected a %s from Origin %r (not in [server] allowed_origins)", scope["method"], origin)
            error = Forbidden("this Origin is not allowed; add it to [server] allowed_origins")
            if write and self.origin_ok(origin, host, scheme=scheme):
                error = Forbidden(f"a {scope['method']} from another origin ({str(origin)[:100]}) is refused: this "
                                  f"server takes writes from its own pages only ({scheme}://, this host and port); "
                                  "add the origin to [server] allowed_origins to allow it")
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _canonical(host: str) -> str:
    """A configured host as ``parse_host`` writes a request's (``[0::1]`` is ``[::1]``), if it parses."""
    parsed = parse_host(host)
    return parsed[0] if parsed is not None else host


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
           "error_response", "parse_host", "parse_origin", "split_host"]
