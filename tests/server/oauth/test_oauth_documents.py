"""Client ID metadata documents: a client whose ``client_id`` is the URL of its metadata signs in
without registering (a real ``ctx serve --http`` fetching from a real local HTTP server; loopback is
allowed because the server's own ``public_url`` is on loopback). Refused, each with its reason in the
log: a document that does not name itself, one too large, one too slow, a redirect; and, with the
real fetcher of a public deployment, every address that is not public (private, loopback,
link-local cloud metadata, IPv4-mapped, shared) and plain http."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from context_harness.server.oauth.documents import ClientDocuments, DocumentRefused, address_allowed
from context_harness.server.oauth.provider import redirect_allowed
from support.http import free_port, serve_in_thread, stop_process
from support.oauth import (
    CALLBACK,
    OAuthServer,
    approve_over_http,
    authorize_url,
    child_environment,
    code_of,
    log_in,
    pkce,
    serve_oauth,
)

pytestmark = pytest.mark.anyio


class Documents(BaseHTTPRequestHandler):
    """``/client.json`` names itself; the others are each wrong in one way."""

    def do_GET(self) -> None:
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        doc: dict[str, Any] = {"client_id": f"{base}{self.path}", "client_name": "Document client",
                               "redirect_uris": [CALLBACK]}
        if self.path == "/moved.json":
            self.send_response(302)
            self.send_header("Location", f"{base}/client.json")
            self.end_headers()
            return
        if self.path == "/other.json":
            doc["client_id"] = f"{base}/client.json"
        elif self.path == "/big.json":
            doc["padding"] = "x" * 20_000
        elif self.path == "/secret.json":
            doc["token_endpoint_auth_method"] = "client_secret_post"
        elif self.path == "/slow.json":
            time.sleep(8)
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def documents() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Documents)
    server.daemon_threads = True
    with serve_in_thread(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    root = tmp_path_factory.mktemp("oauth-documents")
    served = serve_oauth(root, child_environment(root))
    yield served
    stop_process(served.process)


@pytest.mark.slow
async def test_a_client_described_by_a_document_signs_in_without_registering(server: OAuthServer,
                                                                               documents: str) -> None:
    client_id = f"{documents}/client.json"
    async with httpx2.AsyncClient(timeout=30) as http:
        meta = (await http.get(f"{server.url}/.well-known/oauth-authorization-server")).json()
        assert meta["client_id_metadata_document_supported"] is True
        verifier, challenge = pkce()
        code = code_of(await approve_over_http(authorize_url(server.url, client_id, challenge), server.url))
        tokens = await http.post(f"{server.url}/token", data={
            "grant_type": "authorization_code", "code": code.code, "redirect_uri": CALLBACK,
            "code_verifier": verifier, "client_id": client_id})
        assert tokens.status_code == 200, tokens.text
        search = await http.post(f"{server.url}/tools/search", json={"query": "quokka"},
                                 headers={"authorization": f"Bearer {tokens.json()['access_token']}"})
        assert search.status_code == 200
        await log_in(http, server.url)
        listing = (await http.get(f"{server.url}/ui/oauth/clients")).text
        assert "Document client" in listing and client_id in listing


@pytest.mark.slow
@pytest.mark.parametrize(("path", "reason"), [
    ("/other.json", "client_id is not its own URL"),
    ("/big.json", "larger than 16384 bytes"),
    ("/secret.json", "PKCE alone"),
    ("/moved.json", "answered HTTP 302"),
    ("/slow.json", "did not arrive within 5 s"),
])
async def test_a_wrong_document_is_refused_with_its_reason_logged(server: OAuthServer, documents: str, path: str,
                                                                  reason: str) -> None:
    started = time.monotonic()
    async with httpx2.AsyncClient(timeout=60) as http:
        answer = await http.get(authorize_url(server.url, f"{documents}{path}", pkce()[1]))
    assert answer.status_code == 400 and "location" not in answer.headers
    assert answer.json()["error"] == "invalid_request"
    assert reason in answer.json()["error_description"]  # the client is told why
    assert time.monotonic() - started < 25  # the fetch gives up after 5 s
    log = (server.root / "server.log").read_text(encoding="utf-8")
    assert f"refused the client document '{documents}{path}': " in log and reason in log


@pytest.mark.parametrize("address", ["10.1.2.3", "192.168.0.1", "172.16.5.5", "127.0.0.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "::1", "fc00::1", "fe80::1", "::ffff:10.0.0.1",
                                     "::ffff:169.254.169.254", "224.0.0.1"])
def test_no_address_but_a_public_one_is_fetched_from(address: str) -> None:
    assert not address_allowed(address, loopback_ok=False)


def test_public_addresses_are_and_loopback_only_when_testing() -> None:
    assert address_allowed("93.184.216.34", loopback_ok=False) and address_allowed("2606:4700::1111", False)
    assert address_allowed("127.0.0.1", loopback_ok=True) and not address_allowed("10.0.0.1", loopback_ok=True)


@pytest.mark.parametrize(("url", "reason"), [
    ("https://127.0.0.1:9/client.json", "not public"),
    ("https://[::ffff:169.254.169.254]/latest/meta-data", "not public"),
    ("https://10.0.0.8/client.json", "not public"),
    ("http://93.184.216.34/client.json", "must be https"),
    ("https://user@93.184.216.34/client.json", "no user info"),
    ("https://93.184.216.34/", "and a path"),
])
async def test_a_public_deployment_refuses_before_any_request(url: str, reason: str) -> None:
    fetcher = ClientDocuments(loopback_ok=False, redirect_allowed=redirect_allowed)
    with pytest.raises(DocumentRefused, match=reason):
        await fetcher.client(url)


def test_the_documents_own_redirects_are_checked(tmp_path: Path) -> None:
    fetcher = ClientDocuments(loopback_ok=True, redirect_allowed=redirect_allowed)
    url = "https://client.example/meta.json"
    good = fetcher.accept(url, json.dumps({"client_id": url, "redirect_uris": ["https://client.example/cb"]}).encode())
    assert good.token_endpoint_auth_method == "none" and good.client_secret is None
    with pytest.raises(DocumentRefused, match="redirect_uris"):
        fetcher.accept(url, json.dumps({"client_id": url, "redirect_uris": ["http://client.example/cb"]}).encode())
    with pytest.raises(DocumentRefused, match="not JSON"):
        fetcher.accept(url, b"[" * 100_000)
