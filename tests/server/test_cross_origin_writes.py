"""Writes a page on another origin could forge are refused (issue 39): the REST shim and ``/mcp`` take
a POST only as ``application/json`` (``text/plain``, forms and no type are what a page may send
without a CORS preflight: 415), and a write whose ``Origin`` is not the server's own is refused
(403), even from another port of this machine. CLI clients (no ``Origin``), the server's own pages
and listed origins keep working. Every answer under ``/ui`` carries the console's security headers.

The real app under uvicorn on 127.0.0.1, with a writable folder; the folder is listed after each
refused write to show that nothing was written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from context_harness import config as config_mod
from context_harness.console import SECURITY_HEADERS
from support.http import AppServer, free_port
from support.workspace import config_toml, write_files

NOTE = b'{"source": "docs", "path": "inbox/forged.md", "content": "Written by a page on another port."}'
JSON = {"content-type": "application/json"}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


def start(root: Path, server_keys: str = "") -> AppServer:
    write_files(root / "docs", {"a.md": "# A\n\nA note about pelicans.\n"})
    cfg = root / "ctx.toml"
    cfg.write_text(config_toml(docs_root=(root / "docs").as_posix(), server=f"sync_on_start = false\n{server_keys}")
                   .replace("[connectors.filesystem.docs]\n", "[connectors.filesystem.docs]\nwritable = true\n"),
                   encoding="utf-8")
    return AppServer(config_mod.load_file(cfg)).start()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, Path]]:
    root = tmp_path_factory.mktemp("origins")
    app = start(root, 'allowed_origins = ["https://app.example.com"]')
    yield app, root / "docs"
    app.stop()


def notes(docs: Path) -> list[str]:
    return sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*") if p.is_file())


@pytest.mark.parametrize("what, headers, status", [
    ("text/plain from another local port", {"content-type": "text/plain", "origin": "http://127.0.0.1:{other}"},
     403),
    ("JSON from another local port", {**JSON, "origin": "http://127.0.0.1:{other}"}, 403),
    ("JSON from localhost on another port", {**JSON, "origin": "http://localhost:{other}"}, 403),
    ("JSON from the same host over https on another port", {**JSON, "origin": "https://127.0.0.1:{other}"}, 403),
    ("text/plain without Origin", {"content-type": "text/plain;charset=UTF-8"}, 415),
    ("a form", {"content-type": "application/x-www-form-urlencoded"}, 415),
    ("a multipart form", {"content-type": "multipart/form-data; boundary=x"}, 415),
    ("no Content-Type", {}, 415),
    ("a JSON-looking type", {"content-type": "text/json"}, 415),
])
def test_a_write_another_origin_could_forge_writes_nothing(served: tuple[AppServer, Path], what: str,
                                                           headers: dict[str, str], status: int) -> None:
    app, docs = served
    before = notes(docs)
    other = free_port()
    sent = {k: v.format(other=other) for k, v in headers.items()}
    with httpx2.Client(base_url=app.url, timeout=30) as http:
        response = http.post("/tools/note_write", content=NOTE, headers=sent)
        agent = http.post("/agents/nobody/prompt", content=b"{}", headers=sent)
    assert response.status_code == status, f"{what}: {response.status_code} {response.text}"
    assert response.json()["error"]["code"] == ("forbidden" if status == 403 else "bad_request")
    message = response.json()["error"]["message"]
    assert ("allowed_origins" in message) if status == 403 else ("Content-Type: application/json" in message)
    assert agent.status_code == status
    assert notes(docs) == before, f"{what} wrote a note"


def test_legitimate_writers_still_write(served: tuple[AppServer, Path]) -> None:
    app, docs = served
    own = f"http://127.0.0.1:{app.port}"
    cases = {
        "cli.md": JSON,  # curl, the SDK, scripts: no Origin
        "own-page.md": {**JSON, "origin": own},
        "own-page-trailing-slash.md": {**JSON, "origin": own + "/"},
        "by-name.md": {**JSON, "host": f"localhost:{app.port}", "origin": f"http://localhost:{app.port}"},
        "listed.md": {**JSON, "origin": "https://app.example.com"},
        "charset.md": {"content-type": "Application/JSON; charset=utf-8"},
    }
    with httpx2.Client(base_url=app.url, timeout=30) as http:
        for name, headers in cases.items():
            body = NOTE.replace(b"inbox/forged.md", f"inbox/{name}".encode())
            response = http.post("/tools/note_write", content=body, headers=headers)
            assert response.status_code == 200, f"{name}: {response.status_code} {response.text}"
        # reads from another local page stay allowed (a browser shows it no answer without CORS)
        assert http.get("/tools/list", headers={"origin": f"http://127.0.0.1:{free_port()}"}).status_code == 200
    assert {f"inbox/{name}" for name in cases} <= set(notes(docs))


def test_mcp_takes_json_from_its_own_origin_only(served: tuple[AppServer, Path]) -> None:
    app, _ = served
    other = f"http://127.0.0.1:{free_port()}"
    with httpx2.Client(base_url=app.url, timeout=30) as http:
        plain = http.post("/mcp", content=PING, headers={**MCP_HEADERS, "content-type": "text/plain"})
        foreign = http.post("/mcp", content=PING, headers={**MCP_HEADERS, "origin": other})
        ended = http.delete("/mcp", headers={"origin": other, "mcp-session-id": "x"})
        own = http.post("/mcp", content=PING, headers={**MCP_HEADERS, "origin": app.url})
    assert (plain.status_code, plain.json()["error"]["code"]) == (415, "bad_request")
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (403, "forbidden")
    assert ended.status_code == 403
    assert own.status_code != 403 and own.status_code != 415, own.text


def test_a_rebound_name_is_not_the_servers_own_origin(tmp_path: Path) -> None:
    """With ``allowed_hosts = ["*"]`` any Host is answered; an Origin equal to such a Host (a DNS-rebinding
    page: evil.example resolving to 127.0.0.1) is still not the server's own."""
    app = start(tmp_path, 'allowed_hosts = ["*"]')
    try:
        rebound = f"evil.example:{app.port}"
        with httpx2.Client(base_url=app.url, timeout=30) as http:
            response = http.post("/tools/note_write", content=NOTE,
                                 headers={**JSON, "host": rebound, "origin": f"http://{rebound}"})
            assert response.status_code == 403, response.text
            own = http.post("/tools/note_write", content=NOTE, headers={**JSON, "origin": app.url})
            assert own.status_code == 200, own.text
    finally:
        app.stop()
    assert (tmp_path / "docs" / "inbox" / "forged.md").exists()  # the own-origin write, and only it


@pytest.mark.parametrize("method, path, headers", [
    ("GET", "/ui/nowhere", {}),
    ("GET", "/ui/static/nowhere.css", {}),
    ("PUT", "/ui/search", {"content-type": "application/json"}),
    ("POST", "/ui/sources/sync", {"origin": "http://127.0.0.1:9"}),
    ("GET", "/ui/search", {"origin": "null"}),
    ("GET", "/ui/search", {}),
])
def test_every_console_answer_carries_its_security_headers(served: tuple[AppServer, Path], method: str, path: str,
                                                          headers: dict[str, str]) -> None:
    app, _ = served
    with httpx2.Client(base_url=app.url, timeout=30) as http:
        response = http.request(method, path, headers=headers)
    assert response.status_code in (200, 303, 403, 404, 405), response.text
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, f"{method} {path} ({response.status_code}): no {name}"
    api = httpx2.get(f"{app.url}/nowhere", timeout=30)
    assert api.status_code == 404 and "content-security-policy" not in api.headers
