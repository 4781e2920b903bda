"""End to end: the MCP SDK's OAuth client (``OAuthClientProvider``, in-memory tokens) against a real
``ctx serve --http`` with ``[server.oauth]`` on. It is sent to the console's authorization page, the
owner (plain HTTP here; Chromium in tests/browser/test_oauth_browser.py) approves it with ``read``
only; it lists tools, searches, is refused a write naming the scope (2025 era), refreshes (rotation)
and is refused another write (2026-07-28 era), and is refused once the owner revokes it."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.http import stop_process
from support.oauth import (
    TOKEN,
    MemoryStorage,
    Owner,
    approve_over_http,
    csrf_of,
    log_in,
    sdk_provider,
    serve_oauth,
    signed_in,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_sdk_client_signs_in_is_scoped_refreshes_and_is_refused_after_revoke(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    server = serve_oauth(tmp_path, child_env)
    try:
        storage = MemoryStorage()
        owner = Owner(lambda url: approve_over_http(url, server.url, scopes=()))  # read only
        auth = sdk_provider(server, owner, storage)
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"search", "note_write"} <= names  # listed; a call without the scope is refused
                found = await client.call_tool("search", {"query": "quokka", "mode": "keyword"})
                assert not found.is_error
                refused = await client.call_tool("note_write", {"path": "new.md", "content": "hello"})
                assert refused.is_error
                text = refused.content[0].text  # type: ignore[union-attr]
                assert "insufficient_scope" in text and "'write'" in text
        assert owner.sent_to and owner.sent_to[0].startswith(f"{server.url}/authorize?")
        assert "code_challenge_method=S256" in owner.sent_to[0]
        first = storage.tokens
        assert first is not None and first.scope == "read" and first.refresh_token

        # Refresh: the SDK refreshes a token it believes expired; both tokens rotate.
        auth.context.token_expiry_time = 1.0
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:  # the 2026-07-28 era this time
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                assert not (await client.call_tool("sources", {})).is_error
                modern = await client.call_tool("note_edit", {"source": "docs", "path": "harbour.md", "old": "a",
                                                              "new": "b"})
                assert modern.is_error and "insufficient_scope" in modern.content[0].text  # type: ignore[union-attr]
        second = storage.tokens
        assert second is not None and second.access_token != first.access_token
        assert second.refresh_token != first.refresh_token
        assert len(owner.sent_to) == 1  # refreshed, not sent back to the owner

        # The owner revokes the client in the console; its tokens stop working at once.
        async with httpx2.AsyncClient(timeout=30) as owner_http:
            await log_in(owner_http, server.url)
            listing = await owner_http.get(f"{server.url}/ui/oauth/clients")
            assert "SDK test client" in listing.text
            client_id = storage.client_info.client_id  # type: ignore[union-attr]
            revoked = await owner_http.post(f"{server.url}/ui/oauth/revoke",
                                            data={"csrf": csrf_of(listing.text), "client_id": client_id})
            assert revoked.status_code == 303
            assert "SDK test client" not in (await owner_http.get(f"{server.url}/ui/oauth/clients")).text
            after = await owner_http.post(f"{server.url}/tools/search", json={"query": "quokka"},
                                          headers={"authorization": f"Bearer {second.access_token}"})
            assert after.status_code == 401
            assert after.json()["error"]["code"] == "invalid_token"
            assert 'error="invalid_token"' in after.headers["www-authenticate"]
            refresh = await owner_http.post(f"{server.url}/token", data={
                "grant_type": "refresh_token", "refresh_token": second.refresh_token, "client_id": client_id,
                "client_secret": storage.client_info.client_secret})  # type: ignore[union-attr]
            assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"
            # the static token keeps working for scripts, with every scope
            script = await owner_http.post(f"{server.url}/tools/note_write", json={"source": "docs", "path": "s.md", "content": "x"},
                                           headers={"authorization": f"Bearer {TOKEN}"})
            assert script.status_code == 200, script.text
    finally:
        stop_process(server.process)
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    for line in ("the owner granted client", "refused note_write", "the owner revoked client", "token request refused"):
        assert line in log, line
    store = tmp_path / "data" / "oauth.sqlite"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    stored = store.read_bytes()
    for secret in (first.access_token, first.refresh_token, second.access_token, second.refresh_token,
                   storage.client_info.client_secret):  # type: ignore[union-attr]
        assert secret and secret.encode() not in stored  # only hashes at rest


async def test_unauthenticated_request_points_at_the_resource_metadata(tmp_path: Path,
                                                                      child_env: dict[str, str]) -> None:
    server = serve_oauth(tmp_path, child_env)
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                     headers={"accept": "application/json, text/event-stream"})
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == (
                f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource"')
            resource = (await http.get(f"{server.url}/.well-known/oauth-protected-resource")).json()
            assert resource["resource"] == server.url and resource["authorization_servers"] == [server.url]
            assert resource["scopes_supported"] == ["read", "write", "agents"]
            meta = (await http.get(f"{server.url}/.well-known/oauth-authorization-server")).json()
            assert meta["issuer"] == server.url
            assert meta["code_challenge_methods_supported"] == ["S256"]
            assert meta["registration_endpoint"] == f"{server.url}/register"
            assert (await http.get(f"{server.url}/health")).status_code == 200
    finally:
        stop_process(server.process)


async def test_oauth_works_on_the_postgres_backend(tmp_path: Path, child_env: dict[str, str], pg_url: str) -> None:
    """The grants live beside the workspace's local data whatever the backend; the console, read-only on
    PostgreSQL, still takes the owner's approval (a grant changes no document)."""
    env = {**child_env, "CTX_DATABASE_URL": pg_url}
    server = serve_oauth(tmp_path, env, db_extra='backend = "postgres"\nurl = "${CTX_DATABASE_URL}"')
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            _, tokens = await signed_in(http, server.url, scopes=())
            found = await http.post(f"{server.url}/tools/sources", json={},
                                    headers={"authorization": f"Bearer {tokens['access_token']}"})
            assert found.status_code == 200, found.text
    finally:
        stop_process(server.process)
    assert (tmp_path / "data" / "oauth.sqlite").is_file()
