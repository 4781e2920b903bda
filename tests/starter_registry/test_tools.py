"""registry/tools: web-fetch and create-github-issue called over MCP (a real client and the real server)
against local fakes: readable text from HTML, the hosts it may fetch from, issue creation and the
GitHub errors a user can cause."""

from __future__ import annotations

import json
import time

import pytest
from mcp import Client
from starter_registry.fakes import Files, GitHub, extension, serving

from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.results import error_of

pytestmark = pytest.mark.anyio


async def call(workspace, extra: str, name: str, arguments: dict) -> object:
    workspace.write_config(extra)
    async with Harness.open(workspace.config()) as harness:
        async with Client(build_server(harness)) as client:
            return await client.call_tool(name, arguments)


def web_fetch_config(hosts: list[str], allow: str = "127.0.0.1") -> str:
    return f"""
[lua]
http_allow = ["{allow}"]

[tools.script.web-fetch]
path = "{extension("tools/web-fetch/tool.lua")}"
hosts = {json.dumps(hosts)}
"""


async def test_web_fetch_returns_the_readable_text_of_a_page(workspace) -> None:
    with serving(Files) as fake:
        workspace.write_config(web_fetch_config([fake.url]))
        async with Harness.open(workspace.config()) as harness:
            async with Client(build_server(harness)) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                result = await client.call_tool("web-fetch", {"url": f"{fake.url}/article.html"})
                short = await client.call_tool("web-fetch", {"url": f"{fake.url}/article.html", "max_chars": 60})
                feed = await client.call_tool("web-fetch", {"url": f"{fake.url}/feed.xml"})
                image = await client.call_tool("web-fetch", {"url": f"{fake.url}/logo.png"})
    assert listed["web-fetch"].annotations.read_only_hint is True
    page = result.structured_content["result"]
    assert page["title"] == "Caring for Sourdough Starters – The Bakehouse" and page["status"] == 200
    assert page["headings"] == [{"level": 1, "text": "Caring for Sourdough Starters"},
                                {"level": 2, "text": "Feeding schedule"}, {"level": 2, "text": "What the hooch means"}]
    text = page["text"]
    assert text.startswith("# Caring for Sourdough Starters\n\nA starter is a culture of wild yeast")
    assert "## Feeding schedule\n\nFeed it equal weights of flour and water every 12 hours" in text
    assert 'A grey liquid on top ("hooch") means the starter is hungry. Pour it off & feed.' in text
    for dropped in ("dataLayer", "font-family", "injected text", "commented out", "Recipes", "All rights reserved"):
        assert dropped not in text
    assert page["truncated"] is False
    cut = short.structured_content["result"]
    assert cut["truncated"] is True and len(cut["text"]) == 60 and text.startswith(cut["text"])
    assert "Quokka census" in feed.structured_content["result"]["text"]  # other text types come back as they are
    assert error_of(image)["code"] == "tool_error" and "is not a text page (Content-Type image/png)" in error_of(image)["message"]


async def test_web_fetch_refuses_hosts_it_was_not_given(workspace) -> None:
    with serving(Files) as fake, serving(Files) as other:
        port = fake.server_address[1]
        # only this port of 127.0.0.1: the other server's port is refused before any request
        other_port = await call(workspace, web_fetch_config([f"127.0.0.1:{port}"]), "web-fetch",
                                {"url": f"{other.url}/article.html"})
        by_name = await call(workspace, web_fetch_config([f"127.0.0.1:{port}"]), "web-fetch",
                             {"url": f"http://localhost:{port}/article.html"})
        # `hosts` allows it but [lua] http_allow does not: the network policy still refuses
        policy = await call(workspace, web_fetch_config(["*"], allow=f"127.0.0.1:{port}"), "web-fetch",
                            {"url": f"{other.url}/x"})
        unset = await call(workspace, web_fetch_config([]), "web-fetch", {"url": f"{fake.url}/article.html"})
        scheme = await call(workspace, web_fetch_config(["*"]), "web-fetch", {"url": "file:///etc/passwd"})
    assert other.requests == [] and fake.requests == []
    assert "host 127.0.0.1 is not in this tool's `hosts`" in error_of(other_port)["message"]
    assert "host localhost is not in this tool's `hosts`" in error_of(by_name)["message"]
    assert (f"http.get: host '127.0.0.1' is not in [lua] http_allow (port {other.server_address[1]})"
            in error_of(policy)["message"])
    assert "web-fetch has no `hosts` configured" in error_of(unset)["message"]
    assert "url must be an http:// or https:// URL" in error_of(scheme)["message"]


HOSTILE = [  # markup that makes naive patterns backtrack: unclosed tags, comments, CDATA, lone "<"s
    "<" * 300_000,
    "<h1>" * 60_000 + "x",
    "<!--" * 60_000,
    "<![CDATA[" * 40_000,
    "<script>" + "<p " * 100_000,
    "<p" + " a=b" * 100_000,
    "&#x" + "f" * 300_000 + "&" * 100_000,
]


@pytest.mark.parametrize("page", range(len(HOSTILE)))
async def test_web_fetch_reads_hostile_markup_in_linear_time(workspace, page: int) -> None:
    with serving(Files) as fake:
        fake.pages["/hostile.html"] = ("text/html", ("<title>t</title><p>before</p>" + HOSTILE[page]).encode())
        workspace.write_config(web_fetch_config([fake.url]) + "timeout = 10\n")
        async with Harness.open(workspace.config()) as harness:
            async with Client(build_server(harness)) as client:
                started = time.monotonic()
                result = await client.call_tool("web-fetch", {"url": f"{fake.url}/hostile.html", "max_chars": 100})
                elapsed = time.monotonic() - started
    assert not result.is_error, result.content
    assert elapsed < 3, elapsed
    page_out = result.structured_content["result"]
    assert page_out["title"] == "t" and page_out["text"].startswith("before")


def issue_tool_config(base: str) -> str:
    return f"""
[lua]
http_allow = ["127.0.0.1"]

[tools.script.create-github-issue]
path = "{extension("tools/create-github-issue/tool.lua")}"
repo = "acme/rocket"
base_url = "{base}"
env = ["GITHUB_TOKEN"]
"""


async def test_create_github_issue_posts_and_returns_the_issue_url(workspace, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_good")
    with serving(GitHub) as fake:
        fake.token = "ghp_good"
        result = await call(workspace, issue_tool_config(fake.url), "create-github-issue",
                            {"title": "Igniter harness: replace connectors", "body": "Corrosion found on **3** of 4.",
                             "labels": ["propulsion"]})
    assert result.structured_content == {"result": {
        "url": "https://github.com/acme/rocket/issues/58", "number": 58, "state": "open",
        "api_url": f"{fake.url}/repos/acme/rocket/issues/58"}}
    (request,) = fake.requests
    assert request["method"] == "POST" and request["path"] == "/repos/acme/rocket/issues"
    assert request["headers"]["authorization"] == "Bearer ghp_good"
    assert request["headers"]["accept"] == "application/vnd.github+json"
    assert json.loads(request["body"]) == {"title": "Igniter harness: replace connectors",
                                           "body": "Corrosion found on **3** of 4.", "labels": ["propulsion"]}


async def test_create_github_issue_explains_github_errors(workspace, monkeypatch) -> None:
    with serving(GitHub) as fake:
        fake.token = "ghp_good"
        config = issue_tool_config(fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_expired")
        expired = await call(workspace, config, "create-github-issue", {"title": "x"})
        monkeypatch.setenv("GITHUB_TOKEN", "read-only")
        forbidden = await call(workspace, config, "create-github-issue", {"title": "x"})
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_good")
        invalid = await call(workspace, config, "create-github-issue", {"title": "t" * 300})
        monkeypatch.delenv("GITHUB_TOKEN")
        unset = await call(workspace, config, "create-github-issue", {"title": "x"})
    assert "GitHub answered 401 (Bad credentials): GITHUB_TOKEN is invalid or expired" in error_of(expired)["message"]
    assert ("GitHub answered 403 (Resource not accessible by personal access token): the token may not create "
            "issues in acme/rocket") in error_of(forbidden)["message"]
    assert ("GitHub refused the issue (422): Validation Failed; title is too long (maximum is 256 characters)"
            in error_of(invalid)["message"])
    assert "GITHUB_TOKEN is not set" in error_of(unset)["message"]
    assert len(fake.requests) == 3  # the call without a token sent nothing
