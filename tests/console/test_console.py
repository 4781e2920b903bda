"""The web console (/ui) through the real HTTP app under uvicorn: pages render, every value is
escaped, and it sits behind the API's guards (Host/Origin, token via login, CSRF, body limit, read-only)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import httpx2
import pytest

from context_harness.config import Config, UiConfig
from context_harness.console import CSP, ui_enabled
from support.console import client, csrf_of

TOKEN = "tok-9f3e51-never-shown"
PAYLOAD_TITLE = '<script>alert("title")</script>'
PAYLOAD_BODY = '<img src=x onerror="alert(1)"> and <b>bold</b> in a payload note'


@pytest.fixture
def hostile_config(config, config_path: Path):
    """The knowledge base plus a note whose title and body are HTML/JS payloads."""
    (config_path.parent / "docs" / "payload.md").write_text(f"# {PAYLOAD_TITLE}\n\n{PAYLOAD_BODY}\n", encoding="utf-8")
    return config



def test_pages_render_with_csp_and_escape_every_value(hostile_config, start_server):
    server = start_server(hostile_config)
    with client(server) as ui:
        home = ui.get("/ui/", follow_redirects=True)
        assert home.status_code == 200 and home.url.path == "/ui/search"
        assert home.headers["content-security-policy"] == CSP and "'unsafe-inline'" not in CSP
        assert "<script>" not in home.text.replace('<script src="/ui/static/htmx.min.js" defer></script>', "")
        htmx = ui.get("/ui/static/htmx.min.js")
        assert htmx.status_code == 200 and htmx.text.startswith("/*! htmx 2.") and "Zero-Clause BSD" in htmx.text[:400]
        found = ui.get("/ui/search", params={"q": "payload", "mode": "keyword", "explain": "1"})
        assert found.status_code == 200
        assert PAYLOAD_TITLE not in found.text and "&lt;script&gt;alert(" in found.text
        assert re.search(r'<div class="path">filesystem:\w+ · payload\.md[ <]', found.text)  # the path
        assert "<img src=x" not in found.text and "&lt;img src=x" in found.text
        assert '<svg class="bars"' in found.text and "keyword" in found.text
        link = re.search(r'href="(/ui/doc\?id=[^"]+)"', found.text).group(1).replace("&amp;", "&")
        doc = ui.get(link)
        assert doc.status_code == 200 and "Sections" in doc.text
        assert PAYLOAD_TITLE not in doc.text and "<img src=x" not in doc.text and "&lt;b&gt;bold&lt;/b&gt;" in doc.text
        partial = ui.get("/ui/search", params={"q": "tantivy"}, headers={"HX-Request": "true"})
        assert "<html" not in partial.text and "Tantivy notes" in partial.text
        sources = ui.get("/ui/sources")
        assert sources.status_code == 200 and "filesystem" in sources.text and "Embed pending" in sources.text
        missing = ui.get("/ui/doc", params={"id": "no-such-doc"})
        assert missing.status_code == 404 and "no-such-doc" in missing.text


def test_the_token_is_exchanged_for_a_strict_httponly_session(config, start_server):
    config.server.auth_token = TOKEN
    server = start_server(config)
    with client(server) as ui:
        first = ui.get("/ui/search", params={"q": "tantivy"})
        assert first.status_code == 303 and first.headers["location"].startswith("/ui/login?next=")
        login = ui.get(first.headers["location"])
        assert login.status_code == 200 and 'type="password"' in login.text
        wrong = ui.post("/ui/login", data={"csrf": csrf_of(login.text), "token": "nope"})
        assert wrong.status_code == 401 and "Wrong token" in wrong.text
        no_csrf = ui.post("/ui/login", data={"token": TOKEN})
        assert no_csrf.status_code == 403
        right = ui.post(first.headers["location"], data={"csrf": csrf_of(login.text), "token": TOKEN})
        assert right.status_code == 303 and right.headers["location"] == "/ui/search?q=tantivy"
        cookie = right.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
        page = ui.get(right.headers["location"])
        assert page.status_code == 200 and "Tantivy notes" in page.text
        for path in ("/ui/search", "/ui/sources", "/ui/login"):
            assert TOKEN not in ui.get(path).text
        assert ui.get("/tools/list").status_code == 401  # the cookie opens the console, not the API
        ui.post("/ui/logout", data={"csrf": csrf_of(page.text)})
        assert ui.get("/ui/sources").status_code == 303
    with client(server, headers={"Authorization": f"Bearer {TOKEN}"}) as bearer:
        assert bearer.get("/ui/sources").status_code == 200
        assert bearer.post("/ui/sources/embed", data={}).status_code == 403  # a bearer alone is no CSRF token


def test_host_origin_csrf_and_body_limit_guard_the_console(config, start_server):
    server = start_server(config)
    with client(server) as ui:
        assert ui.get("/ui/search", headers={"Host": "evil.example"}).status_code == 421
        page = ui.get("/ui/sources")
        token = csrf_of(page.text)
        foreign = ui.post("/ui/sources/sync", data={"csrf": token, "source": "all"},
                          headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "forbidden"
        missing = ui.post("/ui/sources/sync", data={"source": "all"})
        assert missing.status_code == 403 and "CSRF" in missing.text
        other_session = httpx2.Client(base_url=server.url, timeout=30)
        with other_session:
            assert other_session.post("/ui/sources/sync", data={"csrf": token, "source": "all"}).status_code == 403
        done = ui.post("/ui/sources/sync", data={"csrf": token, "source": "filesystem"})
        assert done.status_code == 303 and "synced" in done.headers["location"]
        assert "Done: synced filesystem" in ui.get(done.headers["location"]).text
        huge = ui.post("/ui/login", content=b"x" * (config.server.max_body_bytes + 1),
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert huge.status_code == 413


def test_read_only_refuses_writes_and_hides_their_buttons(config, start_server):
    config.ui = UiConfig(read_only=True)
    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/sources")
        assert page.status_code == 200 and "Embed pending" not in page.text and "read-only" in page.text
        refused = ui.post("/ui/sources/embed", data={"csrf": csrf_of(page.text)})
        assert refused.status_code == 403 and "read-only" in refused.text


def test_the_console_can_be_switched_off_and_is_off_by_default_off_loopback(config, start_server):
    assert ui_enabled(Config(), loopback=True) and not ui_enabled(Config(), loopback=False)
    assert ui_enabled(Config(ui=UiConfig(enabled=True)), loopback=False)
    config.ui = UiConfig(enabled=False)
    server = start_server(config)
    with client(server) as ui:
        assert ui.get("/ui/search").status_code == 404
        assert ui.get("/health").status_code == 200


def test_the_sources_stream_shows_a_sync_as_it_lands(config, config_path: Path, start_server):
    """The sources page subscribes to /ui/sources/events; a sync started from the page shows up there."""
    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/sources")
        assert 'sse-connect="/ui/sources/events"' in page.text and '<td class="embedding">off</td>' in page.text
        with ui.stream("GET", "/ui/sources/events") as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            lines = events.iter_lines()
            first = next_event(lines)
            assert "filesystem" in first and "<td>4</td>" in first
            (config_path.parent / "docs" / "added.md").write_text("# Added\n\nA fifth note.\n", encoding="utf-8")
            assert ui.post("/ui/sources/sync", data={"csrf": csrf_of(page.text), "source": "filesystem"}).status_code == 303
            assert "<td>5</td>" in next_event(lines)


def next_event(lines) -> str:
    """The data of the next ``sources`` event (comment lines and the ``overview`` events skipped)."""
    data: list[str] = []
    event = None
    for line in lines:
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            if event == "sources":
                return "\n".join(data)
            data, event = [], None
    raise AssertionError("the stream ended")


def test_agents_are_listed_with_their_format_and_resolve_as_the_rest_route_does(served_config: Path, start_server):
    from context_harness import config as config_mod

    server = start_server(config_mod.load_file(served_config))
    with client(server) as ui:
        listing = ui.get("/ui/agents")
        assert listing.status_code == 200
        for name, where in (("reviewer", "an [agents.NAME] table"), ("responder", "a Lua agent script"),
                            ("debugger", "a Markdown agent file")):
            assert f">{name}</a>" in listing.text and where in listing.text
        assert listing.text.count("(read-only here)") == 2
        form = ui.get("/ui/agents/reviewer")
        assert 'name="language"' in form.text and "required" in form.text
        tried = ui.get("/ui/agents/reviewer", params={"run": "1", "language": "python"})
        expected = ui.post("/agents/reviewer/prompt", json={"language": "python"}).json()
        assert tried.status_code == 200 and "You review python code." in expected["system"]
        shown = re.search(r'<pre class="body" id="system">(.*?)</pre>', tried.text, re.S).group(1)
        assert html.unescape(shown) == expected["system"]
        missing = ui.get("/ui/agents/reviewer", params={"run": "1"})
        assert 'role="alert"' in missing.text and "language" in missing.text
        assert ui.get("/ui/agents/nobody").status_code == 404


def test_the_document_page_lists_every_section_of_a_long_document(config, config_path: Path, start_server):
    """The table of contents is the whole document's, one entry per heading, even when the page shows
    a window; the hit's section is marked and anchored."""
    sections = "\n\n".join(f"## Part {i}\n\n" + f"Paragraph {i} about lanterns. " * 120 for i in range(30))
    (config_path.parent / "docs" / "long.md").write_text(f"# Long manual\n\n{sections}\n", encoding="utf-8")
    server = start_server(config)
    with client(server) as http:
        page = http.get("/ui/search", params={"q": "lanterns"}).text
        link = html.unescape(re.search(r'href="(/ui/doc\?id=[^"]+chunk=\d+#chunk-\d+)"', page).group(1))
        doc = http.get(link.split("#")[0]).text
    toc = re.search(r'<nav class="toc".*?</nav>', doc, re.S).group(0)
    assert all(f">Long manual &gt; Part {i}<" in toc for i in range(30)), "every section is listed"
    assert toc.count('aria-current="location"') == 1
    assert f'<span id="{link.split("#")[1]}"></span><div class="here">' in doc
    assert len(re.search(r'<article class="markdown" dir="auto">(.*?)</article>', doc, re.S).group(1)) < 30 * 3000  # a window


def test_the_table_of_contents_of_a_huge_document_lists_the_sections_near_the_page(config, config_path: Path,
                                                                                  start_server):
    """A document of 2,000 sections: the page lists the headings within 200 chunks of it, with links to
    the earlier and later ones (work per page does not grow with the document)."""
    sections = "\n\n".join(f"## Part {i}\n\nParagraph {i} about beacons." for i in range(2000))
    (config_path.parent / "docs" / "huge.md").write_text(f"# Huge\n\n{sections}\n", encoding="utf-8")
    server = start_server(config)
    with client(server) as http:
        page = http.get("/ui/search", params={"q": "Paragraph 450 beacons", "mode": "keyword"}).text
        doc_id = html.unescape(re.search(r'href="/ui/doc\?id=([^"&]+)', page).group(1))
        count = int(re.search(r"this document has (\d+) chunks",
                              http.get("/ui/doc", params={"id": doc_id, "chunk": "99999"}).text).group(1))
        here = count // 2
        middle = http.get("/ui/doc", params={"id": doc_id, "chunk": str(here)}).text
        start = http.get("/ui/doc", params={"id": doc_id}).text

    def toc_of(page: str) -> tuple[str, list[int]]:
        toc = re.search(r'<nav class="toc".*?</nav>', page, re.S).group(0)
        return toc, [int(n) for n in re.findall(r'chunk=(\d+)#chunk-\d+" dir="auto">[^<]*</a></li>', toc)]

    toc, listed = toc_of(middle)
    assert count > 600 and listed[0] <= here - 200 + 2 and here + 200 - 2 <= listed[-1] <= here + 200
    assert len(listed) <= 401 and toc.count('aria-current="location"') == 1
    assert f'chunk={here - 201}#chunk-{here - 201}">Earlier sections<' in toc
    assert f'chunk={here + 201}#chunk-{here + 201}">Later sections<' in toc
    assert f'<span id="chunk-{here}"></span><div class="here">' in middle
    toc, listed = toc_of(start)
    assert "Earlier sections" not in toc and 'chunk=401#chunk-401">Later sections<' in toc and listed[0] == 0
