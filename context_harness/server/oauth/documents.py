"""Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the MCP authorization
spec's preferred registration): a client whose ``client_id`` is an https URL publishes its metadata
there, and this server fetches it instead of a registration.

Fetching a URL a stranger names is bounded every way it can be abused:

- https only, no user info, no fragment, a path; the name resolved once and *every* address it
  resolves to must be public (``is_global``: no private, loopback, link-local - cloud metadata at
  169.254.169.254 -, shared, reserved or multicast address, IPv4-mapped ones included); the request
  then goes to the address checked, so a second DNS answer cannot point it elsewhere (TLS is still
  verified against the name). A server whose own ``public_url`` is on loopback (testing) may fetch
  from loopback, over http too; nothing else.
- no redirects, no proxies from the environment, ``FETCH_SECONDS`` in all, ``MAX_BYTES`` at most
  (read as a stream, dropped past it), status 200 only;
- at most ``FETCHES_PER_MINUTE`` fetches (the whole server), results kept ``CACHE_SECONDS`` (at most
  ``MAX_CACHED``), refusals too, so a flood of authorization requests cannot turn into a flood of
  outgoing requests;
- the document must name itself (``client_id`` equal to its URL), list 1-10 allowed redirect URIs and
  ask for no client secret (``token_endpoint_auth_method`` ``none``).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from collections import OrderedDict, deque
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.shared.auth import OAuthClientInformationFull

from context_harness.common.addresses import address_kind
from context_harness.core.face import SCOPES

MAX_BYTES = 16_384
FETCH_SECONDS = 5.0
CACHE_SECONDS = 300
MAX_CACHED = 200
FETCHES_PER_MINUTE = 20
MAX_REDIRECT_URIS = 10


class DocumentRefused(Exception):
    """A client ID metadata document that was not fetched or not accepted; ``str()`` says why."""


def is_document_url(client_id: str) -> bool:
    """Whether ``client_id`` is a URL (a metadata document) rather than a registered id."""
    return client_id.startswith(("https://", "http://"))


def address_allowed(address: str, loopback_ok: bool) -> bool:
    """Whether a document may be fetched from ``address``: a public one (or loopback, when testing)."""
    kind = address_kind(ipaddress.ip_address(address.split("%", 1)[0]))
    return kind is None or (loopback_ok and kind == "loopback")


class ClientDocuments:
    """Fetches, checks and caches client ID metadata documents (see the module docstring)."""

    def __init__(self, loopback_ok: bool, redirect_allowed: Any) -> None:
        self.loopback_ok = loopback_ok
        self.redirect_allowed = redirect_allowed
        self._cache: OrderedDict[str, tuple[float, OAuthClientInformationFull | str]] = OrderedDict()
        self._fetches: deque[float] = deque()

    async def client(self, url: str) -> OAuthClientInformationFull:
        """The client ``url`` describes; ``DocumentRefused`` naming why not."""
        now = time.monotonic()
        cached = self._cache.get(url)
        if cached is not None and cached[0] > now:
            if isinstance(cached[1], str):
                raise DocumentRefused(cached[1])
            return cached[1]
        try:
            found: OAuthClientInformationFull | str = self.accept(url, await self._fetch(url))
        except DocumentRefused as exc:
            found = str(exc)
        self._cache[url] = (now + CACHE_SECONDS, found)
        self._cache.move_to_end(url)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)
        if isinstance(found, str):
            raise DocumentRefused(found)
        return found

    def _target(self, url: str) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of a URL this server may fetch, or ``DocumentRefused``."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        loopback_name = host in ("localhost", "127.0.0.1", "::1")
        if parts.scheme != "https" and not (parts.scheme == "http" and self.loopback_ok and loopback_name):
            raise DocumentRefused("a client_id URL must be https")
        if not host or parts.username or parts.password or parts.fragment or parts.path in ("", "/"):
            raise DocumentRefused("a client_id URL needs a host and a path, and no user info or fragment")
        return parts.scheme, host, parts.port or (443 if parts.scheme == "https" else 80)

    async def _fetch(self, url: str) -> bytes:
        scheme, host, port = self._target(url)
        now = time.monotonic()
        while self._fetches and self._fetches[0] < now - 60:
            self._fetches.popleft()
        if len(self._fetches) >= FETCHES_PER_MINUTE:
            raise DocumentRefused(f"too many client documents fetched (at most {FETCHES_PER_MINUTE} a minute)")
        self._fetches.append(now)
        try:
            with anyio.fail_after(FETCH_SECONDS):
                resolved = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                addresses = sorted({str(info[4][0]) for info in resolved})
                if not addresses or not all(address_allowed(a, self.loopback_ok) for a in addresses):
                    raise DocumentRefused(f"{host} resolves to an address that is not public")
                return await self._get(url, scheme, host, port, addresses[0])
        except TimeoutError:
            raise DocumentRefused(f"the client document did not arrive within {FETCH_SECONDS:g} s") from None
        except (httpx2.HTTPError, OSError) as exc:
            raise DocumentRefused(f"the client document could not be fetched ({type(exc).__name__})") from None

    async def _get(self, url: str, scheme: str, host: str, port: int, address: str) -> bytes:
        """GET ``url`` from ``address`` (the one checked), TLS verified against ``host``; at most ``MAX_BYTES``."""
        parts = urlsplit(url)
        shown = f"[{address}]" if ":" in address else address
        target = f"{scheme}://{shown}:{port}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        async with httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=FETCH_SECONDS) as http:
            async with http.stream("GET", target, headers={"Host": parts.netloc, "Accept": "application/json"},
                                   extensions={"sni_hostname": host} if scheme == "https" else {}) as response:
                if response.status_code != 200:
                    raise DocumentRefused(f"the client document answered HTTP {response.status_code}, not 200")
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        raise DocumentRefused(f"the client document is larger than {MAX_BYTES} bytes")
                return body

    def accept(self, url: str, body: bytes) -> OAuthClientInformationFull:
        """The client a fetched document describes, once it is checked (see the module docstring)."""
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            raise DocumentRefused("the client document is not JSON") from None
        if not isinstance(doc, dict) or doc.get("client_id") != url:
            raise DocumentRefused("the client document's client_id is not its own URL")
        uris = doc.get("redirect_uris")
        if (not isinstance(uris, list) or not 0 < len(uris) <= MAX_REDIRECT_URIS
                or not all(isinstance(u, str) and self.redirect_allowed(u) for u in uris)):
            raise DocumentRefused(f"the client document needs 1 to {MAX_REDIRECT_URIS} redirect_uris, each https or "
                                  "http on a loopback host")
        if doc.get("token_endpoint_auth_method", "none") != "none" or "client_secret" in doc:
            raise DocumentRefused("a client described by a document authenticates with PKCE alone "
                                  '(token_endpoint_auth_method "none", no client_secret)')
        name = doc.get("client_name")
        return OAuthClientInformationFull(
            client_id=url, redirect_uris=uris, client_name=name[:100] if isinstance(name, str) else None,
            token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"],
            response_types=["code"], scope=" ".join(SCOPES))


__all__ = ["ClientDocuments", "DocumentRefused", "address_allowed", "is_document_url"]
