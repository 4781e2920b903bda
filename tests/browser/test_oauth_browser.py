"""OAuth in Chromium: the MCP SDK's OAuth client (in a thread of its own: Playwright's sync API holds
this one) registers with a real ``ctx serve --http``, and its authorization URL is opened in Chromium,
which is sent to the console's page, logs in, unticks ``write`` and ``agents`` and approves; the
client gets its code back (the redirect to its callback, intercepted), exchanges it with PKCE, lists
the tools and is refused a write. And the authorization page, framed by another page, is not shown.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from browser.console import Events, open_page
from browser.test_quality import axe, axe_script  # noqa: F401 - axe_script: the fixture installing axe-core
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.http import stop_process
from support.oauth import (
    CALLBACK,
    TOKEN,
    MemoryStorage,
    OAuthServer,
    Owner,
    authorize_url,
    child_environment,
    pkce,
    register,
    sdk_provider,
    serve_oauth,
)

WAIT_S = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    root = tmp_path_factory.mktemp("oauth-browser")
    served = serve_oauth(root, child_environment(root))
    yield served
    stop_process(served.process)


def approve_in_chromium(page: Any, url: str) -> str:
    """Open ``url`` (the client's authorization URL), log in, grant ``read`` only; the callback URL."""
    sent_back: list[str] = []

    def callback(route: Any) -> None:
        sent_back.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body="signed in")

    page.route(f"{CALLBACK.rsplit('/', 1)[0]}/**", callback)
    page.goto(url)
    page.wait_for_url(lambda at: "/ui/login?next=" in at)
    page.fill("#token", TOKEN)
    page.click("form button[type=submit]")
    page.wait_for_url(lambda at: "/ui/oauth/authorize?request=" in at)
    assert page.locator(".client-name").inner_text() == "SDK test client"
    assert page.locator("input[value=read]").is_disabled()
    page.uncheck("input[value=write]")
    page.uncheck("input[value=agents]")
    page.click("#approve")
    page.wait_for_url(lambda at: at.startswith(f"{CALLBACK}?"))
    assert sent_back, "the browser was not sent back to the client"
    return sent_back[0]


def test_sdk_client_is_approved_in_chromium_and_scoped(browser: Any, server: OAuthServer) -> None:
    urls: queue.Queue[str] = queue.Queue()
    answers: queue.Queue[str] = queue.Queue()
    outcome: dict[str, Any] = {}

    async def approve(url: str) -> str:
        urls.put(url)
        return await anyio.to_thread.run_sync(lambda: answers.get(timeout=WAIT_S))

    async def run_client() -> None:
        storage = MemoryStorage()
        auth = sdk_provider(server, Owner(approve), storage)
        async with httpx2.AsyncClient(auth=auth, timeout=WAIT_S) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode="legacy") as client:
                outcome["tools"] = {tool.name for tool in (await client.list_tools()).tools}
                outcome["search"] = await client.call_tool("search", {"query": "quokka", "mode": "keyword"})
                outcome["write"] = await client.call_tool("note_write", {"source": "docs", "path": "n.md",
                                                                         "content": "x"})
        outcome["scope"] = storage.tokens.scope if storage.tokens else None

    def in_thread() -> None:
        try:
            anyio.run(run_client)
        except BaseException as exc:  # reported below
            outcome["error"] = exc
        finally:
            urls.put("")

    worker = threading.Thread(target=in_thread, daemon=True)
    worker.start()
    url = urls.get(timeout=WAIT_S)
    assert url.startswith(f"{server.url}/authorize?"), outcome.get("error")
    page = open_page(browser, Events())
    try:
        answers.put(approve_in_chromium(page, url))
    finally:
        page.context.close()
    worker.join(WAIT_S)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["scope"] == "read"
    assert {"search", "note_write"} <= outcome["tools"]
    assert not outcome["search"].is_error
    assert outcome["write"].is_error and "insufficient_scope" in outcome["write"].content[0].text


def test_the_authorization_page_is_not_shown_in_a_frame(browser: Any, server: OAuthServer) -> None:
    async def authorization_page() -> str:
        async with httpx2.AsyncClient(timeout=WAIT_S) as http:
            client = (await register(http, server.url, name="framed client")).json()
            first = await http.get(authorize_url(server.url, client["client_id"], pkce()[1]))
            return str(first.headers["location"])

    with ThreadPoolExecutor(1) as pool:  # not on this thread: Playwright's event loop runs here
        page_url = pool.submit(anyio.run, authorization_page).result(timeout=WAIT_S)
    page = open_page(browser, Events())
    try:
        page.goto(f"{server.url}/ui/login")
        page.fill("#token", TOKEN)
        page.click("form button[type=submit]")
        page.wait_for_load_state()
        page.goto(page_url)  # shown when not framed
        assert page.locator("#approve").count() == 1
        page.route("http://framer.test/", lambda route: route.fulfill(
            status=200, content_type="text/html", body=f'<iframe id="f" src="{page_url}"></iframe>'))
        page.goto("http://framer.test/")
        page.wait_for_timeout(1500)
        frame = page.frame_locator("#f")
        # refused: X-Frame-Options DENY, frame-ancestors 'none' (neither the page nor the login it sends to)
        assert frame.locator("#approve").count() == 0
        assert frame.locator("#token").count() == 0
    finally:
        page.context.close()


def test_the_oauth_pages_pass_axe(browser: Any, server: OAuthServer, axe_script: Path) -> None:  # noqa: F811
    """axe-core finds nothing on the authorization page nor on the authorized clients' list."""

    async def authorization_page() -> str:
        async with httpx2.AsyncClient(timeout=WAIT_S) as http:
            client = (await register(http, server.url, name="audited client")).json()
            first = await http.get(authorize_url(server.url, client["client_id"], pkce()[1]))
            return str(first.headers["location"])

    with ThreadPoolExecutor(1) as pool:
        page_url = pool.submit(anyio.run, authorization_page).result(timeout=WAIT_S)
    page = open_page(browser, Events())
    try:
        page.goto(page_url)
        page.fill("#token", TOKEN)
        page.click("form button[type=submit]")
        page.wait_for_url(lambda at: "/ui/oauth/authorize?request=" in at)
        for url in (page.url, f"{server.url}/ui/oauth/clients"):
            page.goto(url)
            found = axe(page, axe_script)
            assert found["violations"] == [], (url, found["violations"])
    finally:
        page.context.close()
