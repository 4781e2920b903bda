"""Helpers for the web console's tests over HTTP: a client of a started server, a page's CSRF token."""

from __future__ import annotations

import re
from typing import Any

import httpx2


def client(server: Any, **kwargs: Any) -> httpx2.Client:
    """An HTTP client of ``server`` (a started test server with ``url``)."""
    return httpx2.Client(base_url=server.url, timeout=30, **kwargs)


def csrf_of(page: str) -> str:
    """The session's CSRF token as a console page carries it."""
    match = re.search(r'name="csrf-token" content="([0-9a-f]{64})"', page)
    assert match, "no CSRF token on the page"
    return match.group(1)
