"""OAuth test helpers: a real ``ctx serve --http`` with ``[server.oauth]`` on (127.0.0.1, a free port,
``public_url`` its own address), the owner's approval on the console's page over plain HTTP, and the
MCP SDK's ``OAuthClientProvider`` with an in-memory token storage."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from support.http import free_port, spawn_http
from support.workspace import write_files

TOKEN = "oauth-owner-token-7e2a"
CALLBACK = "http://127.0.0.1:9/callback"  # never contacted: the tests read the code from the redirect


@dataclass
class OAuthServer:
    url: str
    root: Path
    config: Path
    process: subprocess.Popen
    port: int


def oauth_config(root: Path, port: int, extra_server: str = "", public_url: str | None = None,
                 oauth_extra: str = "", db_extra: str = "") -> str:
    docs = root / "docs"
    return (f'[db]\npath = "data/ctx.sqlite"\n{db_extra}\n\n[embedding]\nprovider = "disabled"\n\n'
            f'[server]\nsync_on_start = true\nauth_token = "{TOKEN}"\n'
            f'public_url = "{public_url or f"http://127.0.0.1:{port}"}"\n{extra_server}\n'
            f'[server.oauth]\nenabled = true\n{oauth_extra}\n'
            f'[connectors.filesystem.docs]\nroot = "{docs.as_posix()}"\nwritable = true\n\n'
            '[agents.keeper]\ndescription = "Keeps the harbour."\nsystem_prompt = "You keep the harbour."\n')


def serve_oauth(root: Path, env: dict[str, str], port: int | None = None, public_url: str | None = None,
                extra_server: str = "", oauth_extra: str = "", db_extra: str = "") -> OAuthServer:
    """Write a one-note workspace in ``root`` and serve it with OAuth on (stderr: ``root/server.log``)."""
    write_files(root / "docs", {"harbour.md": "# Harbour\n\nThe lighthouse keeper logs every quokka.\n"})
    port = port or free_port()
    config = root / "ctx.toml"
    config.write_text(oauth_config(root, port, extra_server, public_url, oauth_extra, db_extra), encoding="utf-8")
    log = (root / "server.log").open("ab")
    process = spawn_http(["--config", str(config)], env, port, timeout=30, stderr=log)
    log.close()
    return OAuthServer(f"http://127.0.0.1:{port}", root, config, process, port)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html) or re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


async def log_in(http: httpx2.AsyncClient, base: str, token: str = TOKEN) -> None:
    """Log ``http`` (keeping cookies) in to the console with the owner's token."""
    page = await http.get(f"{base}/ui/login")
    answer = await http.post(f"{base}/ui/login?next=/ui/search", data={"csrf": csrf_of(page.text), "token": token})
    assert answer.status_code == 303, answer.text


async def approve_over_http(authorization_url: str, base: str, scopes: tuple[str, ...] = ("write", "agents"),
                            decision: str = "approve") -> str:
    """Play the owner: follow ``authorization_url`` to the console's page, log in, answer it; returns
    the URL the browser would be sent back to (the client's redirect URI with a code, or an error)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.get(authorization_url)
        assert first.status_code == 302, first.text
        page_url = first.headers["location"]
        assert page_url.startswith(f"{base}/ui/oauth/authorize?request="), page_url
        await log_in(http, base)
        page = await http.get(page_url)
        assert page.status_code == 200, page.text
        request_id = parse_qs(urlsplit(page_url).query)["request"][0]
        form: dict[str, str | list[str]] = {"csrf": csrf_of(page.text), "request": request_id, "decision": decision,
                                            "scope": list(scopes)}
        answer = await http.post(f"{base}/ui/oauth/authorize", data=form)
        assert answer.status_code == 303, answer.text
        return str(answer.headers["location"])


async def approve_workspaces(authorization_url: str, base: str, scopes: list[str], token: str) -> str:
    """Play the owner of ``ctx serve --http --workspaces``: follow the client to the console's page, log
    in with the registry's ``token`` on the way back to it, tick ``scopes`` (``read:NAME`` ...); returns
    the redirect back to the client."""
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.get(authorization_url)
        assert first.status_code == 302, first.text
        page_url = first.headers["location"]
        assert page_url.startswith(f"{base}/ui/oauth/authorize?request="), page_url
        login = await http.get(page_url, follow_redirects=True)  # to the login, on the way back here
        assert str(login.url).startswith(f"{base}/ui/login?next="), login.url
        answer = await http.post(str(login.url), data={"csrf": csrf_of(login.text), "token": token})
        assert answer.status_code == 303, answer.text
        page = await http.get(page_url)
        assert page.status_code == 200 and 'id="workspace-scopes"' in page.text, page.text[:400]
        request_id = parse_qs(urlsplit(page_url).query)["request"][0]
        answered = await http.post(f"{base}/ui/oauth/authorize", data={
            "csrf": csrf_of(page.text), "request": request_id, "decision": "approve", "scope": scopes})
        assert answered.status_code == 303, answered.text
        return str(answered.headers["location"])


def code_of(redirect: str) -> AuthorizationCodeResult:
    query = parse_qs(urlsplit(redirect).query)
    assert "code" in query, redirect
    return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


@dataclass
class MemoryStorage(TokenStorage):
    """The SDK client's token storage, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Owner:
    """The callbacks of an ``OAuthClientProvider``: where it sent the browser, and the approval
    (``approve(url) -> redirect``) that answers it."""

    approve: Callable[[str], Awaitable[str]]
    sent_to: list[str] = field(default_factory=list)

    async def redirect(self, url: str) -> None:
        self.sent_to.append(url)

    async def callback(self) -> AuthorizationCodeResult:
        return code_of(await self.approve(self.sent_to[-1]))


def sdk_provider(server: OAuthServer, owner: Owner, storage: MemoryStorage, scope: str | None = None
                 ) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(redirect_uris=[CALLBACK], client_name="SDK test client",  # type: ignore[list-item]
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="client_secret_post", scope=scope)
    return OAuthClientProvider(f"{server.url}/mcp", metadata, storage, owner.redirect, owner.callback)


# -- the protocol by hand (plain httpx), for the hostile tests -------------------------------------

def pkce() -> tuple[str, str]:
    """A PKCE ``(code_verifier, S256 code_challenge)`` pair."""
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


async def register(http: httpx2.AsyncClient, base: str, redirect: str = CALLBACK,
                   name: str = "hand-made client") -> httpx2.Response:
    return await http.post(f"{base}/register", json={
        "redirect_uris": [redirect], "client_name": name, "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"], "token_endpoint_auth_method": "client_secret_post"})


def authorize_url(base: str, client_id: str, challenge: str, *, redirect: str = CALLBACK, resource: str | None = None,
                  method: str = "S256", scope: str = "read write agents") -> str:
    from urllib.parse import urlencode

    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "state": "st4te",
             "code_challenge": challenge, "code_challenge_method": method, "scope": scope,
             "resource": resource or base}
    return f"{base}/authorize?{urlencode(query)}"


async def exchange(http: httpx2.AsyncClient, base: str, client: dict[str, str], code: str, verifier: str,
                   redirect: str = CALLBACK) -> httpx2.Response:
    return await http.post(f"{base}/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "code_verifier": verifier,
        "client_id": client["client_id"], "client_secret": client["client_secret"]})


async def signed_in(http: httpx2.AsyncClient, base: str, scopes: tuple[str, ...] = ("write", "agents")
                    ) -> tuple[dict[str, str], dict[str, str]]:
    """A client registered, approved by the owner and holding tokens: ``(client, tokens)``."""
    client = (await register(http, base)).json()
    verifier, challenge = pkce()
    redirect = await approve_over_http(authorize_url(base, client["client_id"], challenge), base, scopes)
    tokens = await exchange(http, base, client, code_of(redirect).code, verifier)
    assert tokens.status_code == 200, tokens.text
    return client, tokens.json()


def child_environment(root: Path) -> dict[str, str]:
    """Environment for a spawned server: isolated XDG folders (as the ``child_env`` fixture)."""
    import os

    kept = ("PATH", "HOME", "LANG", "SYSTEMROOT", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env.update(XDG_DATA_HOME=str(root / "xdg-data"), XDG_CONFIG_HOME=str(root / "xdg-config"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), HF_HUB_OFFLINE="1")
    return env
