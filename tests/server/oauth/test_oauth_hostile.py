"""Hostile OAuth cases against a real ``ctx serve --http``: each refused with a clear error and
nothing granted. A code replayed (and what it issued revoked), a wrong ``code_verifier``, PKCE
``plain``, a redirect URI not registered, a token asked for or issued for another resource, a
refresh token reused (the grant revoked), an expired token, a registration flood (429, storage
bounded), the authorization page framed or answered without the CSRF token."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from support.http import stop_process
from support.oauth import (
    CALLBACK,
    OAuthServer,
    approve_over_http,
    authorize_url,
    child_environment,
    code_of,
    csrf_of,
    exchange,
    log_in,
    pkce,
    register,
    serve_oauth,
    signed_in,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    root = tmp_path_factory.mktemp("oauth")
    served = serve_oauth(root, child_environment(root), oauth_extra="registrations_per_minute = 100")
    yield served
    stop_process(served.process)


async def search(http: httpx2.AsyncClient, base: str, access: str) -> httpx2.Response:
    return await http.post(f"{base}/tools/search", json={"query": "quokka", "mode": "keyword"},
                           headers={"authorization": f"Bearer {access}"})


async def test_each_rest_call_is_checked_against_the_scopes_granted(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        _, tokens = await signed_in(http, server.url, scopes=())  # read only
        bearer = {"authorization": f"Bearer {tokens['access_token']}"}
        assert (await http.get(f"{server.url}/tools/list", headers=bearer)).status_code == 200
        assert (await search(http, server.url, tokens["access_token"])).status_code == 200
        for tool, scope, body in (("note_write", "write", {"source": "docs", "path": "x.md", "content": "x"}),
                                  ("agent_run", "agents", {"agent": "keeper", "task": "anything"})):
            refused = await http.post(f"{server.url}/tools/{tool}", json=body, headers=bearer)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "insufficient_scope"
            assert f"needs the OAuth scope '{scope}'" in refused.json()["error"]["message"]
            assert refused.headers["www-authenticate"] == f'Bearer error="insufficient_scope", scope="{scope}"'
        assert not (server.root / "docs" / "x.md").exists()
        agent = (await http.post(f"{server.url}/tools/agent_inject", json={"name": "keeper"}, headers=bearer))
        assert agent.status_code == 200, agent.text  # adopting an agent only reads


async def test_a_replayed_code_is_refused_and_revokes_what_it_issued(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        verifier, challenge = pkce()
        code = code_of(await approve_over_http(authorize_url(server.url, client["client_id"], challenge), server.url))
        first = await exchange(http, server.url, client, code.code, verifier)
        assert first.status_code == 200
        access = first.json()["access_token"]
        assert (await search(http, server.url, access)).status_code == 200
        replay = await exchange(http, server.url, client, code.code, verifier)
        assert replay.status_code == 400
        assert replay.json()["error"] == "invalid_grant"
        assert "already used" in replay.json()["error_description"]
        assert "access_token" not in replay.json()
        assert (await search(http, server.url, access)).status_code == 401  # what the code issued is revoked


async def test_a_wrong_code_verifier_is_refused(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        _, challenge = pkce()
        code = code_of(await approve_over_http(authorize_url(server.url, client["client_id"], challenge), server.url))
        wrong, _ = pkce()
        answer = await exchange(http, server.url, client, code.code, wrong)
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_grant" and "access_token" not in answer.json()
        assert answer.json()["error_description"].startswith("incorrect code_verifier: its S256 hash is not")


async def test_plain_pkce_and_a_missing_challenge_are_refused(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        for url in (authorize_url(server.url, client["client_id"], "x" * 43, method="plain"),
                    authorize_url(server.url, client["client_id"], "").replace("&code_challenge=&", "&")):
            answer = await http.get(url)
            assert answer.status_code == 302  # back to the (registered) client with the error
            query = parse_qs(urlsplit(answer.headers["location"]).query)
            assert query["error"] == ["invalid_request"] and "code" not in query
            assert "code_challenge" in query["error_description"][0]
    log = (server.root / "server.log").read_text(encoding="utf-8")
    assert "oauth: authorization request refused (invalid_request: " in log


async def test_a_redirect_uri_not_registered_is_refused(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        _, challenge = pkce()
        answer = await http.get(authorize_url(server.url, client["client_id"], challenge,
                                              redirect="http://127.0.0.1:9/elsewhere"))
        assert answer.status_code == 400 and "location" not in answer.headers  # never sent to that URI
        assert answer.json()["error"] == "invalid_request"
        assert "not registered" in answer.json()["error_description"]
        refused = await register(http, server.url, redirect="http://attacker.example/callback")
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_redirect_uri"
        assert "use https, or http on localhost" in refused.json()["error_description"]
        with_user = await register(http, server.url, redirect="https://a;b@client.example/callback")
        assert with_user.status_code == 400 and with_user.json()["error"] == "invalid_redirect_uri"


async def test_authorization_for_another_resource_is_refused(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        _, challenge = pkce()
        answer = await http.get(authorize_url(server.url, client["client_id"], challenge,
                                              resource="https://other.example/mcp"))
        assert answer.status_code == 302
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert query["error"] == ["invalid_target"] and "code" not in query
        assert "issues tokens for" in query["error_description"][0]


async def test_a_reused_refresh_token_revokes_the_grant_and_an_expired_token_says_so(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client, tokens = await signed_in(http, server.url)
        refresh = {"grant_type": "refresh_token", "client_id": client["client_id"],
                   "client_secret": client["client_secret"]}
        rotated = await http.post(f"{server.url}/token", data={**refresh, "refresh_token": tokens["refresh_token"]})
        assert rotated.status_code == 200
        fresh = rotated.json()
        assert fresh["refresh_token"] != tokens["refresh_token"]
        assert (await search(http, server.url, fresh["access_token"])).status_code == 200
        with sqlite3.connect(server.root / "data" / "oauth.sqlite") as db:  # the access token's time is up
            db.execute("UPDATE tokens SET expires = 1 WHERE kind = 'access'")
        expired = await search(http, server.url, fresh["access_token"])
        assert expired.status_code == 401
        assert "expired; use the refresh token" in expired.json()["error"]["message"]
        assert 'error="invalid_token"' in expired.headers["www-authenticate"]
        reused = await http.post(f"{server.url}/token", data={**refresh, "refresh_token": tokens["refresh_token"]})
        assert reused.status_code == 400
        assert "already used" in reused.json()["error_description"]
        again = await http.post(f"{server.url}/token", data={**refresh, "refresh_token": fresh["refresh_token"]})
        assert again.status_code == 400  # the whole grant went with the reuse
        assert again.json()["error"] == "invalid_grant"


async def test_the_authorization_page_refuses_framing_and_answers_without_csrf(server: OAuthServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, server.url)).json()
        _, challenge = pkce()
        first = await http.get(authorize_url(server.url, client["client_id"], challenge))
        page_url = first.headers["location"]
        anonymous = await http.get(page_url)
        assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/ui/login?next=")
        await log_in(http, server.url)
        page = await http.get(page_url)
        assert page.status_code == 200
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert "form-action 'self' http://127.0.0.1:9" in page.headers["content-security-policy"]
        request_id = parse_qs(urlsplit(page_url).query)["request"][0]
        forged = await http.post(f"{server.url}/ui/oauth/authorize",
                                 data={"request": request_id, "decision": "approve", "csrf": "forged"})
        assert forged.status_code == 403 and "location" not in forged.headers
        refused = await http.post(f"{server.url}/ui/oauth/authorize", data={
            "request": request_id, "decision": "deny", "csrf": csrf_of(page.text)})
        assert refused.status_code == 303
        query = parse_qs(urlsplit(refused.headers["location"]).query)
        assert refused.headers["location"].startswith(CALLBACK)
        assert query["error"] == ["access_denied"] and query["state"] == ["st4te"] and "code" not in query


async def test_a_token_issued_for_another_resource_is_refused(tmp_path: Path) -> None:
    env = child_environment(tmp_path)
    first = serve_oauth(tmp_path, env)
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            _, tokens = await signed_in(http, first.url)
    finally:
        stop_process(first.process)
    # The same workspace served as another resource (public_url changed): its old tokens are refused.
    moved = serve_oauth(tmp_path, env, port=first.port, public_url=f"http://localhost:{first.port}")
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await search(http, moved.url, tokens["access_token"])
            assert answer.status_code == 401
            assert answer.json()["error"]["code"] == "invalid_token"
            assert f"issued for {first.url}, not for this server (http://localhost:{first.port})" in (
                answer.json()["error"]["message"])
    finally:
        stop_process(moved.process)


async def test_a_registration_flood_is_refused_and_bounded(tmp_path: Path) -> None:
    server = serve_oauth(tmp_path, child_environment(tmp_path), oauth_extra="max_clients = 4")  # 10 a minute
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            answers = [await register(http, server.url, name=f"flood {n}") for n in range(40)]
        statuses = [a.status_code for a in answers]
        assert statuses[:10] == [201] * 10 and set(statuses[10:]) == {429}
        assert answers[-1].json()["error"] == "temporarily_unavailable"
        assert int(answers[-1].headers["retry-after"]) <= 61
        with sqlite3.connect(tmp_path / "data" / "oauth.sqlite") as db:
            assert db.execute("SELECT count(*) FROM clients").fetchone()[0] == 4  # the newest four kept
    finally:
        stop_process(server.process)
