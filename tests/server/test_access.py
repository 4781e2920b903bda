"""Access (issue 16, battery 7; issue 39): a foreign Host or Origin, a write from another local origin, a
body not sent as JSON, a missing or wrong token and oversized bodies (declared or streamed) are refused
with their codes, while another client keeps being served.

The real app under uvicorn on 127.0.0.1 with a token; hostile clients in two threads hammer it with
every kind of refused request while a well-behaved client searches; every one of its requests must
succeed, and none of the refusals may echo the token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from context_harness import config as config_mod
from support.http import AppServer
from support.workspace import write_knowledge_base

pytestmark = pytest.mark.slow

TOKEN = "tok-access-4e9b1d"
LIMIT = 4096
ROUNDS = 30  # of every refused request, per hostile thread


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    cfg = write_knowledge_base(tmp_path_factory.mktemp("access"), server=(
        f'sync_on_start = false\nauth_token = "{TOKEN}"\nmax_body_bytes = {LIMIT}\n'
        'allowed_hosts = ["ctx.internal"]\nallowed_origins = ["https://app.example.com"]'))
    app = AppServer(config_mod.load_file(cfg)).start()
    yield app
    app.stop()


def streamed(size: int) -> Iterator[bytes]:
    """A body without Content-Length (chunked), larger than the limit."""
    sent = 0
    while sent < size:
        yield b"x" * 1024
        sent += 1024


AUTH = {"authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json"}
# (what, method, path, headers, body, status, code)
REFUSED: list[tuple[str, str, str, dict[str, str], Any, int, str]] = [
    ("foreign Host", "GET", "/tools/list", {**AUTH, "host": "evil.example"}, None, 421, "forbidden"),
    ("foreign Host with port", "GET", "/health", {"host": "evil.example:80"}, None, 421, "forbidden"),
    ("rebinding name for loopback", "POST", "/tools/search", {**AUTH, "host": "127.0.0.1.nip.io"}, b'{"query":"x"}',
     421, "forbidden"),
    ("foreign Origin", "POST", "/tools/search", {**AUTH, "origin": "https://evil.example"}, b'{"query":"x"}', 403,
     "forbidden"),
    ("null Origin", "GET", "/tools/sources", {**AUTH, "origin": "null"}, None, 403, "forbidden"),
    ("foreign Origin on /mcp", "POST", "/mcp", {**AUTH, "origin": "http://evil.example"}, b"{}", 403, "forbidden"),
    ("no token", "GET", "/tools/list", {}, None, 401, "unauthorized"),
    ("no token on /mcp", "POST", "/mcp", {}, b"{}", 401, "unauthorized"),
    ("wrong token", "POST", "/tools/search", {"authorization": "Bearer nope"}, b'{"query":"x"}', 401, "unauthorized"),
    ("token prefix", "GET", "/tools/list", {"authorization": f"Bearer {TOKEN[:-1]}"}, None, 401, "unauthorized"),
    ("token plus a byte", "GET", "/tools/list", {"authorization": f"Bearer {TOKEN}x"}, None, 401, "unauthorized"),
    ("token without scheme", "GET", "/tools/list", {"authorization": TOKEN}, None, 401, "unauthorized"),
    ("token as Basic", "GET", "/tools/list", {"authorization": f"Basic {TOKEN}"}, None, 401, "unauthorized"),
    ("token in the query", "GET", f"/tools/list?token={TOKEN}", {}, None, 401, "unauthorized"),
    ("declared oversized body", "POST", "/tools/search", {**AUTH, **JSON}, b'{"query": "' + b"a" * LIMIT + b'"}', 413,
     "bad_request"),
    ("streamed oversized body", "POST", "/tools/search", {**AUTH, **JSON}, "stream", 413, "bad_request"),
    ("text/plain body", "POST", "/tools/search", {**AUTH, "content-type": "text/plain"}, b'{"query":"x"}', 415,
     "bad_request"),
    ("write from another loopback port", "POST", "/tools/search", {**AUTH, **JSON, "origin": "http://127.0.0.1:9"},
     b'{"query":"x"}', 403, "forbidden"),
    ("oversized body on /mcp", "POST", "/mcp", {**AUTH, "accept": "application/json, text/event-stream",
                                                "content-type": "application/json"}, b"[" + b" " * LIMIT + b"]", 413,
     "bad_request"),
]


def refuse(http: httpx2.Client, case: tuple[str, str, str, dict[str, str], Any, int, str]) -> str | None:
    """Send one refused request; the problem with its answer, or None."""
    what, method, path, headers, body, status, code = case
    content = streamed(LIMIT * 4) if body == "stream" else body
    response = http.request(method, path, headers=headers, content=content)
    if response.status_code != status:
        return f"{what}: {response.status_code} {response.text[:200]}"
    if response.json()["error"]["code"] != code:
        return f"{what}: code {response.json()['error']['code']}"
    if TOKEN in response.text or TOKEN in str(response.headers):
        return f"{what}: the answer echoes the token"
    return None


def test_refusals_do_not_disturb_another_client(server: AppServer) -> None:
    problems: list[str] = []
    served: list[float] = []
    done = threading.Event()

    def hostile() -> None:
        with httpx2.Client(base_url=server.url, timeout=30) as http:
            for _ in range(ROUNDS):
                problems.extend(p for p in (refuse(http, case) for case in REFUSED) if p)

    def well_behaved() -> None:
        with httpx2.Client(base_url=server.url, timeout=30, headers=AUTH) as http:
            while not done.is_set():
                started = time.monotonic()
                response = http.post("/tools/search", json={"query": "tantivy rust"})
                served.append(time.monotonic() - started)
                if response.status_code != 200 or response.json()["results"][0]["title"] != "Tantivy notes":
                    problems.append(f"the well-behaved client got {response.status_code} {response.text[:200]}")
                sources = http.get("/tools/sources")
                if sources.status_code != 200:
                    problems.append(f"the well-behaved client got {sources.status_code} for sources")

    attackers = [threading.Thread(target=hostile) for _ in range(2)]
    friend = threading.Thread(target=well_behaved)
    friend.start()
    for thread in attackers:
        thread.start()
    for thread in attackers:
        thread.join(timeout=300)
    done.set()
    friend.join(timeout=30)
    assert not problems, "\n".join(problems[:20])
    assert len(served) >= 20
    served.sort()
    print(f"\naccess battery: {2 * ROUNDS * len(REFUSED)} refused requests; the other client was served "
          f"{len(served)} searches, p50 {served[len(served) // 2] * 1000:.1f} ms, max {served[-1] * 1000:.1f} ms")
    with httpx2.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/tools/list", headers=AUTH).status_code == 200


def test_allowed_host_and_origin_pass(server: AppServer) -> None:
    with httpx2.Client(base_url=server.url, timeout=30, headers=AUTH) as http:
        assert http.get("/tools/list", headers={"host": "ctx.internal:9999"}).status_code == 200
        assert http.get("/tools/list", headers={"origin": "https://app.example.com"}).status_code == 200
        assert http.get("/tools/list", headers={"origin": "http://localhost:3000"}).status_code == 200
        assert http.post("/tools/search", content=b'{"query": "' + b"a" * (LIMIT - 64) + b'"}',
                         headers={"content-type": "application/json"}).status_code == 200


def test_health_needs_no_token_and_shows_none(server: AppServer) -> None:
    with httpx2.Client(base_url=server.url, timeout=30) as http:
        health = http.get("/health")
    assert health.status_code == 200 and TOKEN not in health.text
