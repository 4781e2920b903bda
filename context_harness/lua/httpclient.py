"""The blocking HTTP client behind Lua's ``http.*``: stdlib ``http.client`` with hard limits.

- Only ``http``/``https``; where a script may connect is ``lua/netpolicy.py``'s ``Policy`` (``[lua]
  http_allow``; loopback, private and other non-public addresses refused unless listed), checked
  on every redirect hop against the resolved address, which is then the one connected to.
- A deadline, not a per-read timeout: a timer shuts the socket down when the time is up
  (``deadline.Deadline``), so a server that drips bytes or stalls in the TLS handshake or the
  headers cannot hold the script past its limit. Connecting gets ``CONNECT_SECONDS`` at most.
- Response bodies are capped (``[lua] max_response_bytes``) before they are buffered whole.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from context_harness import __version__
from context_harness.common.deadline import Deadline
from context_harness.common.validation import plain_int
from context_harness.lua.netpolicy import Policy
from context_harness.lua.runtime import HostError, HostTimeout

MAX_REDIRECTS = 5
CONNECT_SECONDS = 10.0  # to connect (never past the request's deadline)
REDIRECTS = {301, 302, 303, 307, 308}
USER_AGENT = f"context-harness/{__version__} (lua)"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def as_lua_data(self, parse: Callable[[bytes], Any] = json.loads) -> dict[str, Any]:
        """The response as the script sees it; ``parse`` turns a JSON-looking body into ``json``
        (it returns None for text that is not JSON, and may raise when the JSON is too large)."""
        return {
            "status": self.status,
            "ok": 200 <= self.status < 300,
            "headers": self.headers,
            "body": self.body,
            "json": _maybe_json(self.body, self.headers.get("content-type", ""), parse),
        }


def _declared(policy: Policy, host: str, port: int, addresses: list[str], refusal: Callable[[str], str]) -> list[str]:
    """The ``addresses`` of ``host`` that the manifest's hosts cover; ``HostError`` when none is."""
    kept = []
    for address in addresses:
        try:
            policy.pick(host, port, [address])
        except HostError:
            continue
        kept.append(address)
    if not kept:
        raise HostError(refusal(f"{host}:{port}"))
    return kept


def _maybe_json(body: bytes, content_type: str, parse: Callable[[bytes], Any]) -> Any:
    head = body[:64].lstrip()
    if not head or ("json" not in content_type and head[:1] not in (b"{", b"[")):
        return None
    try:
        return parse(body)
    except (ValueError, RecursionError):
        return None


class HttpClient:
    """``declared``: for a script from a registry, the hosts its manifest lists and the message for a
    host outside them; a request must then pass both those and ``allow`` (``[lua] http_allow``)."""

    def __init__(self, allow: list[str] | None, max_response_bytes: int, *,
                 declared: tuple[list[str], Callable[[str], str]] | None = None) -> None:
        self.policy = Policy.parse(allow)
        self.declared = None if declared is None else (Policy.parse(declared[0]), declared[1])
        self.max_response_bytes = max_response_bytes
        self._ssl: ssl.SSLContext | None = None

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def address(self, host: str, port: int) -> str:
        """The IP address to connect to for ``host``: resolved once and checked against the policy
        (the connection then goes to exactly this address)."""
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            if ":" in host:  # a bracketed literal ([...]) that is not an IPv6 address
                raise HostError(f"host [{host}] is not a valid IPv6 address; write it in full, "
                                "e.g. [::ffff:127.0.0.1]") from None
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
            except (socket.gaierror, UnicodeError):
                raise HostError(f"host {host!r} not found") from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if self.declared is not None:
            addresses = _declared(self.declared[0], host, port, addresses, self.declared[1])
        return self.policy.pick(host, port, addresses)

    def request(self, method: str, url: str, *, headers: dict[str, str], body: bytes | None,
                deadline: float, script_deadline: float) -> Response:
        """Send one request (following up to five redirects) and read the whole response.

        ``deadline`` bounds this request; ``script_deadline`` is the script's own limit: when that
        one is what ran out, ``HostTimeout`` ends the script, otherwise ``HostError`` is raised.
        """
        for _ in range(MAX_REDIRECTS + 1):
            response, location = self._once(method, url, headers, body, deadline, script_deadline)
            if location is None:
                return response
            url = urljoin(url, location)
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", None
        raise HostError(f"{method} {_display(url)}: more than {MAX_REDIRECTS} redirects")

    def _once(self, method: str, url: str, headers: dict[str, str], body: bytes | None,
              deadline: float, script_deadline: float) -> tuple[Response, str | None]:
        try:
            parts = urlsplit(url)
        except ValueError:  # e.g. a bracketed host that is not an IPv6 address: [::ffff:127.1]
            raise HostError(f"invalid URL {_display(url)!r}: its host is not a valid address or name") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise HostError(f"invalid URL {_display(url)!r}: use http:// or https:// with a host")
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise HostError(f"invalid port in URL {_display(url)!r}") from None
        host = parts.hostname
        ip = self.address(host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        where = f"{method} {_display(url)}"

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self._expired(where, deadline, script_deadline)
        with Deadline(remaining) as limit:
            if scheme == "https":
                conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                    host, port, timeout=limit.connect_timeout(CONNECT_SECONDS), context=self._ssl_context())
            else:
                conn = http.client.HTTPConnection(host, port, timeout=limit.connect_timeout(CONNECT_SECONDS))
            _pin(conn, ip, limit)
            try:
                return self._exchange(conn, method, target, headers, body, where, limit, deadline, script_deadline)
            except TimeoutError:
                self._expired(where, deadline, script_deadline)
            except (http.client.HTTPException, OSError) as exc:
                if limit.expired:
                    self._expired(where, deadline, script_deadline)
                raise HostError(f"{where}: {_network_error(exc)}") from None
            except ValueError:  # http.client's checks on header names/values and URLs
                raise HostError(f"{where}: invalid request (check header names and values)") from None
            finally:
                conn.close()
        raise AssertionError("unreachable")  # pragma: no cover

    def _exchange(self, conn: http.client.HTTPConnection, method: str, target: str, headers: dict[str, str],
                  body: bytes | None, where: str, limit: Deadline, deadline: float,
                  script_deadline: float) -> tuple[Response, str | None]:
        conn.connect()
        if conn.sock is not None:  # connected: reads may now take what is left of the deadline
            conn.sock.settimeout(max(0.001, limit.remaining()))
        send_headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **headers}
        conn.request(method, target, body=body, headers=send_headers)
        resp = conn.getresponse()
        location = resp.getheader("location") if resp.status in REDIRECTS else None
        if location:
            resp.close()
            return Response(resp.status, {}, b""), location
        data = self._read_body(resp, where)
        if limit.expired:
            self._expired(where, deadline, script_deadline)
        resp_headers: dict[str, str] = {}
        for name, value in resp.getheaders():
            key = name.lower()
            resp_headers[key] = f"{resp_headers[key]}, {value}" if key in resp_headers else value
        return Response(resp.status, resp_headers, data), None

    def _read_body(self, resp: http.client.HTTPResponse, where: str) -> bytes:
        cap = self.max_response_bytes
        declared = plain_int(resp.getheader("content-length"))
        if declared is not None and declared > cap:
            raise HostError(f"{where}: response of {declared} bytes exceeds the {cap}-byte limit "
                            "([lua] max_response_bytes)")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise HostError(f"{where}: response exceeds the {cap}-byte limit ([lua] max_response_bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    @staticmethod
    def _expired(where: str, deadline: float, script_deadline: float) -> None:
        if script_deadline <= deadline + 0.001:
            raise HostTimeout()
        raise HostError(f"{where}: timed out")


def _pin(conn: http.client.HTTPConnection, ip: str, limit: Deadline) -> None:
    """Make ``conn`` connect to ``ip`` (the checked address), still sending ``Host`` and TLS SNI for
    its host name; its socket is under ``limit`` from the moment it connects (the TLS handshake too)."""

    def connect(address: tuple[str, int], timeout: Any = None, source_address: Any = None) -> socket.socket:
        sock = socket.create_connection((ip, address[1]), timeout, source_address)
        limit.watch(sock)
        return sock

    conn._create_connection = connect  # type: ignore[attr-defined]


def _network_error(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "host not found"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return "TLS certificate verification failed"
    if isinstance(exc, ssl.SSLError):
        return "TLS error"
    if isinstance(exc, (ConnectionResetError, http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return "the server closed the connection"
    if isinstance(exc, http.client.HTTPException):
        return "invalid HTTP response"
    return "network error"


def _display(url: str) -> str:
    """The URL without its query string (which may hold tokens), for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0][:200]
    if parts.scheme and parts.netloc:
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return f"{parts.scheme}://{netloc}{parts.path}"
    return url[:200]
