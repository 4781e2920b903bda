"""Reading in the console, through the real HTTP app under uvicorn: documents rendered as Markdown,
hostile Markdown inert, links and wikilinks (partial paths included) to the linked document's page,
the document's links, backlinks and history beside it, and clean snippets with the match marked."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from context_harness.console.markdown import plain, snippet
from context_harness.store.records import document_id
from support.console import client

HOSTILE = """# Hostile note

<script>alert("script")</script>

[click](javascript:alert('link')) and [spaced](  javascript:alert('spaced')) and [data](data:text/html;base64,PHNjcmlwdD4=)

<a href="javascript:alert('raw')" onclick="alert('click')">raw anchor</a>

<img src=x onerror="alert('img')"> ![pic](javascript:alert('image'))

<iframe src="https://example.org/"></iframe> <style>body { display: none }</style>

[[x" onmouseover="alert('wiki')]] and <javascript:alert('autolink')> and <svg onload="alert('svg')">

*emphasis* with `<b>code</b>` and [web](https://example.org/page) and ![a map](map.png)
"""
ALLOWED_TAGS = {"a", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
                "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"}


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def article_of(page: str) -> str:
    return re.search(r'<article class="markdown" dir="auto">(.*?)</article>', page, re.S).group(1)


@pytest.fixture
def vault(config, config_path: Path):
    docs = config_path.parent / "docs"
    (docs / "projects" / "garden-shed").mkdir(parents=True)
    (docs / "projects" / "garden-shed" / "permit.md").write_text(
        "# Shed permit\n\nThe council's planning permit for the shed.\n", encoding="utf-8")
    (docs / "garden.md").write_text(
        "# Garden plan\n\nSee [[garden-shed/permit]], the [permit file](projects/garden-shed/permit.md) and "
        "[[nowhere yet]].\n\n| Bed | Crop |\n|-----|------|\n| A | beans |\n\n```python\nprint('grow')\n```\n\n"
        "Water the `beans` daily, says the **permit** [note](projects/garden-shed/permit.md).\n", encoding="utf-8")
    (docs / "hostile.md").write_text(HOSTILE, encoding="utf-8")
    return config


def test_hostile_markdown_comes_out_inert(vault, start_server):
    server = start_server(vault)
    with client(server) as ui:
        page = ui.get("/ui/doc", params={"id": document_id("filesystem:docs", "hostile.md")})
    assert page.status_code == 200
    body = article_of(page.text)
    parser = Elements()
    parser.feed(body)
    assert parser.found, "the document is rendered"
    for tag, attrs in parser.found:
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on") and name not in {"style", "src", "srcdoc"}, (tag, name)
            if name == "href":
                assert value and value.startswith(("/ui/", "https://", "http://", "mailto:", "#")), value
    assert '<h1 dir="auto">Hostile note</h1>' in body and "<em>emphasis</em>" in body
    assert "<code>&lt;b&gt;code&lt;/b&gt;</code>" in body  # code shows the text, escaped
    assert "&lt;script&gt;alert" in body  # raw HTML shows as text
    assert '<a href="https://example.org/page" rel="noopener noreferrer">web</a>' in body
    assert "[image: a map]" in body  # images as their alt text (the CSP would block them)


def test_documents_render_with_their_links_to_console_pages(vault, start_server):
    garden = document_id("filesystem:docs", "garden.md")
    permit = document_id("filesystem:docs", "projects/garden-shed/permit.md")
    server = start_server(vault)
    with client(server) as ui:
        page = ui.get("/ui/doc", params={"id": garden}).text
        permit_page = ui.get("/ui/doc", params={"id": permit}).text
    body = article_of(page)
    assert '<h1 dir="auto">Garden plan</h1>' in body and '<td dir="auto">beans</td>' in body and "```" not in body
    assert '<pre><code class="language-python">print(' in body
    assert '<a href="/ui/doc?id=' + permit.replace(":", "%3A") + '" class="wikilink"' in body  # [[garden-shed/permit]]
    assert f'<a href="/ui/doc?id={permit.replace(":", "%3A")}" rel="noopener noreferrer">permit file</a>' in body
    assert re.search(r'<a href="/ui/search\?q=nowhere%20yet" class="wikilink unresolved"[^>]*>nowhere yet</a>', body)
    aside = re.search(r'<aside class="connections".*?</aside>', page, re.S).group(0)
    assert "Shed permit" in aside.split("<h2>Backlinks</h2>")[0] and "nowhere yet" in aside
    assert "<h2>History</h2>" in aside and re.search(r"added <time datetime=\"20[^\"]+\">20", aside)
    back = re.search(r"<h2>Backlinks</h2>(.*?)<h2>", permit_page, re.S).group(1)
    assert f'href="/ui/doc?id={garden.replace(":", "%3A")}" dir="auto">Garden plan</a>' in back
    assert "version <code" in page


def test_snippets_are_plain_words_with_the_match_marked(vault, start_server):
    server = start_server(vault)
    with client(server) as ui:
        page = ui.get("/ui/search", params={"q": "beans daily", "mode": "keyword"}).text
    shown = [html.unescape(re.sub(r"<[^>]+>", "", s)) for s in re.findall(r'<p class="snippet" dir="auto">(.*?)</p>', page, re.S)]
    garden = next(s for s in shown if "Water" in s)
    assert "`" not in garden and "](" not in garden and "**" not in garden and "[[" not in garden
    assert "Water the beans daily, says the permit note." in garden
    assert "<mark>beans</mark>" in page and "<mark>daily</mark>" in page


def test_plain_and_snippet_by_themselves() -> None:
    assert plain("… use `ctx sync` with [the docs](x.md), [[a/b|B]] and **bold** | a | b |") == (
        "… use ctx sync with the docs, B and bold · a · b")
    marked = snippet('<script>x</script> searching "search" researched', "Search")
    assert str(marked) == ('&lt;script&gt;x&lt;/script&gt; <mark>searching</mark> &quot;<mark>search</mark>&quot; '
                           "researched")


def test_each_explain_bar_is_drawn_against_the_best_of_its_own_mode(config, config_path: Path, start_server):
    """Keyword mode: the best keyword hit has the full bar and a weaker one a shorter bar (not every
    keyword bar full, as when the bars were scaled against the larger of the two scores of one hit)."""
    docs = config_path.parent / "docs"
    (docs / "many.md").write_text("# Kites\n\nkite kite kite kite kite festival kites in the wind.\n", encoding="utf-8")
    (docs / "once.md").write_text("# Beach day\n\nA long day at the beach with a picnic, a book and one kite, "
                                  "then swimming, sandcastles and ice cream until sunset.\n", encoding="utf-8")
    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/search", params={"q": "kite", "mode": "keyword", "explain": "1"}).text
    widths = [float(w) for w in re.findall(r'<rect class="kw" x="70" y="2" height="14" width="([\d.]+)"', page)]
    semantic = [float(w) for w in re.findall(r'<rect class="sem" x="70" y="20" height="14" width="([\d.]+)"', page)]
    assert len(widths) == 2 and widths[0] == 160.0 and 0 < widths[1] < 160.0, widths
    assert semantic == [0.0, 0.0]
    assert "What the scores mean" in page and "BM25" in page


def test_short_query_words_are_marked_only_when_nothing_longer_is_asked() -> None:
    assert str(snippet("engines written in Rust", "engine in rust")) == (
        "<mark>engines</mark> written in <mark>Rust</mark>")
    assert str(snippet("Go in production", "go")) == "<mark>Go</mark> in production"


def test_words_of_unspaced_scripts_are_marked_where_they_stand() -> None:
    assert str(snippet("我们的发布流程需要先在预发布环境中完成回归测试。", "发布流程")) == (
        "我们的<mark>发布流程</mark>需要先在预<mark>发布</mark>环境中完成回归测试。")
    assert str(snippet("ภาษาไทยเป็นภาษาที่สวยงาม", "สวยงาม")) == "ภาษาไทยเป็นภาษาที่<mark>สวยงาม</mark>"
    assert str(snippet("우리는 학교에서 공부합니다", "학교")) == "우리는 <mark>학교</mark>에서 공부합니다"


def test_more_results_pages_on_up_to_the_search_tools_most(config, config_path: Path, start_server):
    docs = config_path.parent / "docs" / "boats"
    docs.mkdir()
    for n in range(25):
        (docs / f"boat{n}.md").write_text(f"# Boat {n}\n\nThe dinghy number {n} is moored here.\n", encoding="utf-8")
    server = start_server(config)
    with client(server) as ui:
        first = ui.get("/ui/search", params={"q": "dinghy", "mode": "keyword", "source": "filesystem:docs"}).text
        assert first.count('<li class="hit">') == 20
        more = html.unescape(re.search(r'<a class="more" href="([^"]+)">More results</a>', first).group(1))
        assert more.startswith("/ui/search?") and "limit=40" in more and "source=filesystem%3Adocs" in more
        second = ui.get(more).text
        assert second.count('<li class="hit">') == 25 and "More results" not in second
        assert ui.get("/ui/search", params={"q": "dinghy", "limit": "500"}).status_code == 200  # capped at 100


def test_a_failed_sync_is_not_shown_with_the_time_of_the_last_good_one(config, config_path: Path, start_server):
    import shutil
    import time

    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/sources").text
        assert ui.post("/ui/sources/sync", data={"csrf": re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1),
                                                 "source": "filesystem:docs"}).status_code == 303
        synced = re.search(r'<td class="last-sync"><time datetime="(20[^"]*)">\1</time> · ok</td>',
                           ui.get("/ui/sources").text).group(1)
        shutil.rmtree(config_path.parent / "docs")
        time.sleep(1.1)  # times are to the second: the failing sync's must differ from the good one's
        ui.post("/ui/sources/sync", data={"csrf": re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1),
                                          "source": "filesystem:docs"})
        row = ui.get("/ui/sources").text
    failed = re.search(r'<td class="last-sync"><span class="error"><time datetime="(20[^"]*)">\1</time> · error</span>'
                       rf'<br>last successful: <time datetime="{re.escape(synced)}">{re.escape(synced)}</time></td>', row)
    assert failed, row  # the failing sync's own time beside "error", the good one's after "last successful"
    assert failed.group(1) > synced and f"{synced} · error" not in row


def test_the_graph_of_a_neighbourhood_and_of_the_whole(vault, start_server):
    garden = document_id("filesystem:docs", "garden.md")
    permit = document_id("filesystem:docs", "projects/garden-shed/permit.md")
    server = start_server(vault)
    with client(server) as ui:
        around = ui.get("/ui/graph.json", params={"id": permit}).json()
        whole = ui.get("/ui/graph.json").json()
        page = ui.get("/ui/graph", params={"id": permit}).text
        missing = ui.get("/ui/graph", params={"id": "no-such-doc"})
    assert {n["id"] for n in around["nodes"]} == {garden, permit}
    assert around["edges"] == [{"from": garden, "to": permit}]  # two links from garden, one edge
    assert [n["here"] for n in around["nodes"] if n["id"] == permit] == [True]
    assert len(whole["nodes"]) == 7 and {"from": garden, "to": permit} in whole["edges"]  # KB_DOCS, garden, permit, hostile
    assert '<h1>Around <bdi dir="auto">Shed permit</bdi></h1>' in page and "Garden plan → Shed permit" in page
    assert '<script src="/ui/static/d3-force.min.js" defer></script>' in page
    assert missing.status_code == 404 and "no-such-doc" in missing.text


@pytest.mark.anyio
async def test_the_whole_graph_is_refused_past_its_most(harness) -> None:
    graph = await harness.link_graph(None, most=2)
    assert graph["nodes"] == [] and "more than the 2 the whole graph draws" in graph["note"]


ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


def test_every_stored_time_is_a_time_element_kept_on_one_line(vault, config_path: Path, start_server):
    """A raw ISO stamp wrapped at its hyphens in a narrow table cell: each is a <time datetime> now, and the
    console's stylesheet keeps a <time> on one line."""
    server = start_server(vault)
    with client(server) as ui:
        page = ui.get("/ui/sources").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
        assert ui.post("/ui/sources/sync", data={"csrf": csrf, "source": "filesystem:docs"}).status_code == 303
        pages = {path: ui.get(path).text for path in
                 ("/ui/sources", f"/ui/doc?id={document_id('filesystem:docs', 'garden.md')}", "/ui/trash")}
        css = ui.get("/ui/static/console.css").text
    assert re.search(r"(?m)^time \{ white-space: nowrap; \}", css)
    stamped = 0
    for path, text in pages.items():
        times = re.findall(r'<time datetime="([^"]+)">([^<]+)</time>', text)
        assert all(a == b and ISO.fullmatch(a) for a, b in times), (path, times)
        stamped += len(times)
        bare = ISO.findall(re.sub(r'<time datetime="[^"]+">[^<]+</time>', "", text))
        assert bare == [], f"{path}: stamps outside <time>: {bare}"
    assert stamped >= 4  # the last sync, the sync history, the document's update and its history
