"""The console's sessions: a random session id in an HttpOnly, SameSite=Strict cookie, and a CSRF
token derived from it (HMAC with a per-process key) that every write form carries.

When ``[server] auth_token`` is set, a session counts as logged in only after the login form was
given that token; without a token every session is logged in. Sessions live in memory: a restart
logs everyone out, which is the safe direction.
"""

from __future__ import annotations

import hmac
import secrets
from hashlib import sha256

from starlette.requests import Request
from starlette.responses import Response

COOKIE = "ctx_console"
MAX_SESSIONS = 10_000


class Sessions:
    """Session ids handed out, which of them logged in, and the CSRF token of each."""

    def __init__(self, token: str | None) -> None:
        self.token = token.encode() if token else None
        self._key = secrets.token_bytes(32)
        self._logged_in: set[str] = set()

    @property
    def needs_login(self) -> bool:
        return self.token is not None

    def session_id(self, request: Request) -> str | None:
        value = request.cookies.get(COOKIE, "")
        return value if len(value) == 43 and value.replace("-", "").replace("_", "").isalnum() else None

    def logged_in(self, request: Request) -> bool:
        if self.token is None:
            return True
        if self.bearer_ok(request.headers.get("authorization", "")):
            return True
        sid = self.session_id(request)
        return sid is not None and sid in self._logged_in

    def bearer_ok(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        return self.token is not None and scheme.lower() == "bearer" and self.token_ok(value.strip())

    def token_ok(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token)

    def log_in(self, request: Request, response: Response) -> None:
        """A fresh session id (never the one sent before login), logged in."""
        if len(self._logged_in) >= MAX_SESSIONS:
            self._logged_in.clear()
        sid = new_session_id()
        self._logged_in.add(sid)
        set_cookie(response, sid, request)

    def log_out(self, request: Request) -> None:
        self._logged_in.discard(self.session_id(request) or "")

    def csrf(self, sid: str) -> str:
        return hmac.new(self._key, sid.encode(), sha256).hexdigest()

    def csrf_ok(self, request: Request, given: str | None) -> bool:
        sid = self.session_id(request)
        return sid is not None and bool(given) and hmac.compare_digest(self.csrf(sid), str(given))


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def set_cookie(response: Response, sid: str, request: Request) -> None:
    response.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/ui",
                        secure=request.url.scheme == "https")


__all__ = ["COOKIE", "Sessions", "new_session_id", "set_cookie"]
