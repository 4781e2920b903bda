"""The web console in headless Chromium against the real ``ctx serve --http``: log in with the token,
search and open a hit at its section, the explain chart, a source's row following a new file live
(server-sent events), writes refused without the CSRF token and in read-only mode, payload notes
rendered as text with nothing executed, keyboard reach and labels, and no page needing more than
its Content-Security-Policy allows. With ``CTX_SCREENSHOTS=1`` the same tests save the pictures of
docs/how-to/web-console.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from browser.console import TOKEN, WAIT_MS, Console, Events, log_in, open_page, serve_console

from context_harness.store.records import document_id
from support.http import stop_process

# A write from the page's own script: the status and text of the answer, redirects not followed.
POST_FROM_PAGE = """async ([path, fields]) => {
  const answer = await fetch(path, {method: "POST", body: new URLSearchParams(fields), redirect: "manual"});
  return [answer.status, await answer.text()];
}"""
CSRF = "() => document.querySelector('meta[name=csrf-token]').content"


def search(page: Any, query: str, mode: str = "keyword", explain: bool = False) -> None:
    page.fill("#q", query)
    page.select_option("#mode", mode)
    page.set_checked("#explain", explain)
    page.click("form.search button[type=submit]")
    page.locator("#results li.hit").first.wait_for()


def test_login_takes_the_token_and_refuses_a_wrong_one(browser: Any, console: Console, events: Events, shoot) -> None:
    page = open_page(browser, events)
    page.goto(f"{console.url}/ui/search?q=harbour")
    assert "/ui/login" in page.url, "the console opened without a login"
    shoot(page, "login")
    page.fill("#token", "not-the-token")
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    assert "Wrong token" in page.locator("p.error").inner_text()
    assert page.context.cookies() and page.goto(f"{console.url}/ui/sources").url.find("/ui/login") > 0
    log_in(page, console.url)
    page.goto(f"{console.url}/ui/search?q=harbour")
    assert page.url.endswith("/ui/search?q=harbour") and page.locator("#results li.hit").count() >= 1
    cookie = next(c for c in page.context.cookies() if c["name"] == "ctx_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
    assert TOKEN not in page.content()
    page.context.close()


def test_a_hit_opens_the_document_at_its_section(page: Any, shoot) -> None:
    from playwright.sync_api import expect  # installed: the page fixture skips otherwise

    search(page, "quokkaflare")
    hit = page.locator("#results li.hit").first
    assert "Lighthouse" in hit.locator(".path").inner_text()
    shoot(page, "search")
    hit.locator("a").first.click()
    page.wait_for_url(re.compile(r"/ui/doc\?id=.+&chunk=\d+#chunk-\d+$"))
    anchor = page.locator("article.markdown div.here")  # the hit's section, which the URL's fragment scrolls to
    assert anchor.count() == 1 and "quokkaflare sighting" in anchor.inner_text()
    fragment = page.url.rsplit("#", 1)[1]
    assert page.locator(f"article.markdown span#{fragment} + div.here").count() == 1
    expect(anchor).to_be_in_viewport()
    assert anchor.locator("h2").inner_text() == "Lighthouse"  # rendered, not raw Markdown
    here = page.locator("nav.toc li[aria-current=location]")
    assert here.count() == 1 and "Lighthouse" in here.inner_text()
    assert page.locator("h1").inner_text() == "Harbour manual"
    body = page.locator("article.markdown")
    assert body.is_visible() and "quokkaflare sighting" in body.inner_text()
    assert "spring tide" not in body.inner_text(), "the page shows the document's start, not the hit's section"
    assert page.locator("main a", has_text="From the start").count() == 1
    shoot(page, "document")
    page.locator("main a", has_text="From the start").click()
    page.wait_for_url(re.compile(r"&offset=0$"))
    assert page.locator("article.markdown h1").first.inner_text() == "Harbour manual"
    page.locator("nav.toc a", has_text="Tides").click()
    page.wait_for_url(re.compile(r"&chunk=\d+#chunk-\d+$"))
    assert "spring tide" in page.locator("article.markdown div.here").inner_text()
    assert page.locator("nav.toc li[aria-current=location]").inner_text().endswith("Tides")


def test_the_explain_view_draws_the_chart(page: Any, shoot) -> None:
    search(page, "which engine ranks documents in Rust", mode="hybrid", explain=True)
    chart = page.locator("#results li.hit svg.bars").first
    chart.wait_for()
    assert chart.is_visible() and "keyword" in (chart.get_attribute("aria-label") or "")
    assert float(chart.locator("rect.kw").get_attribute("width") or 0) > 0
    assert float(chart.locator("rect.sem").get_attribute("width") or 0) > 0, "hybrid mode has a semantic score"
    caption = page.locator("#results li.hit figcaption").first.inner_text()
    assert "keyword" in caption and "semantic" in caption and "fused" in caption
    assert "Tantivy notes" in page.locator("#results li.hit a").first.inner_text()
    shoot(page, "explain")


def test_a_new_file_shows_on_the_sources_page_without_a_reload(page: Any, console: Console, shoot) -> None:
    page.goto(f"{page.url.split('/ui/')[0]}/ui/sources")
    row = page.locator("#source-rows tr", has_text="docs")
    count = row.locator("td").nth(2)
    before = int(count.inner_text())
    page.evaluate("() => { window.notReloaded = true; }")
    (console.docs / "arrivals.md").write_text("# Arrivals\n\nThe ferry arrives at noon.\n", encoding="utf-8")
    page.wait_for_function("n => Number(document.querySelector('#source-rows tr td:nth-of-type(3)')"
                           ".textContent.trim()) === n", arg=before + 1, timeout=WAIT_MS)
    assert page.evaluate("() => window.notReloaded === true"), "the page reloaded instead of updating in place"
    shoot(page, "sources")
    (console.docs / "arrivals.md").unlink()
    page.wait_for_function("n => Number(document.querySelector('#source-rows tr td:nth-of-type(3)')"
                           ".textContent.trim()) === n", arg=before, timeout=WAIT_MS)


def test_a_write_without_the_csrf_token_is_refused(page: Any) -> None:
    page.goto(f"{page.url.split('/ui/')[0]}/ui/sources")
    status, text = page.evaluate(POST_FROM_PAGE, ["/ui/sources/sync", {"source": "filesystem:docs"}])
    assert status == 403 and "CSRF token is missing" in text
    status, text = page.evaluate(POST_FROM_PAGE, ["/ui/sources/sync", {"source": "filesystem:docs", "csrf": "0" * 64}])
    assert status == 403 and "CSRF token" in text
    status, _ = page.evaluate(POST_FROM_PAGE, ["/ui/sources/sync", {"source": "filesystem:docs", "csrf": page.evaluate(CSRF)}])
    assert status == 0, "the same POST with the page's token goes through (a redirect)"
    page.click("#source-rows button:has-text('Sync filesystem:docs')")
    page.wait_for_url(re.compile(r"/ui/sources\?done="))
    assert "synced filesystem:docs" in page.locator("p.notice").inner_text()


def test_read_only_mode_refuses_the_sync_post(browser: Any, events: Events, tmp_path: Path) -> None:
    served = serve_console(tmp_path, extra="[ui]\nread_only = true\n", embedding="disabled")
    try:
        page = open_page(browser, events)
        log_in(page, served.url)
        page.goto(f"{served.url}/ui/sources")
        assert "read-only" in page.locator("header").inner_text()
        assert page.locator("#source-rows button").count() == 0, "read-only mode still shows the sync button"
        status, text = page.evaluate(POST_FROM_PAGE, ["/ui/sources/sync", {"source": "filesystem:docs", "csrf": page.evaluate(CSRF)}])
        assert status == 403 and "read-only" in text
        status, text = page.evaluate(POST_FROM_PAGE, ["/ui/sources/embed", {"csrf": page.evaluate(CSRF)}])
        assert status == 403 and "read-only" in text
        page.context.close()
    finally:
        stop_process(served.process)


def test_payload_notes_render_as_text_and_nothing_runs(browser: Any, console: Console, events: Events) -> None:
    # The CSP is bypassed here, so escaping alone has to keep the payloads inert.
    page = open_page(browser, events, bypass_csp=True)
    log_in(page, console.url)
    search(page, "xsspayload")
    hit = page.locator("#results li.hit").first
    assert '<script>alert("title")</script>' in hit.locator("a").first.inner_text()
    assert "<img src=x" in hit.inner_text() or "<img src=x" in page.locator("#results").inner_text()
    hit.locator("a").first.click()
    page.wait_for_url(re.compile(r"/ui/doc\?"))
    body = page.locator("article.markdown").inner_text()
    assert "<script>alert('script')</script>" in body and "<img src=x onerror=" in body
    assert "javascript:alert('link')" in body
    assert page.locator("main img, main script, main a[href^='javascript:']").count() == 0
    for link in page.locator("nav.toc a").all():
        link.click()
        page.wait_for_load_state()
    page.wait_for_timeout(300)  # an image's error handler would have fired by now
    assert events.dialogs == [], f"a payload ran: {events.dialogs}"
    assert page.evaluate("() => document.querySelectorAll('img, main script').length") == 0
    page.context.close()


def test_the_pages_keep_their_payloads_inert_under_the_csp(page: Any, events: Events) -> None:
    search(page, "xsspayload")
    page.locator("#results li.hit a").first.click()
    page.wait_for_url(re.compile(r"/ui/doc\?"))
    assert events.dialogs == []
    # A CSP report does not matter here. No /favicon.ico request either: the pages name an empty icon.
    assert [e for e in events.errors if "Content Security Policy" not in e] == []


def tab_order(page: Any, steps: int = 25) -> list[str]:
    """The ids (or tag names) Tab visits from the top of the page."""
    page.locator("body").focus()
    seen = []
    for _ in range(steps):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("() => { const e = document.activeElement;"
                                  " return e.id || (e.tagName + ':' + (e.textContent || '').trim()); }"))
    return seen


UNLABELLED = """() => [...document.querySelectorAll("input, select, textarea")]
  .filter(e => e.type !== "hidden" && e.labels.length === 0 && !e.getAttribute("aria-label"))
  .map(e => e.outerHTML)"""


def test_keyboard_reaches_the_search_and_every_control_has_a_label(page: Any, console: Console) -> None:
    order = tab_order(page)
    assert "q" in order, f"Tab never reached the search box: {order}"
    submit = next((i for i, what in enumerate(order) if what == "BUTTON:Search"), None)
    assert submit is not None and submit > order.index("q"), f"Tab never reached the Search button: {order}"
    page.focus("#q")
    page.keyboard.type("quokkaflare")
    page.keyboard.press("Enter")
    page.locator("#results li.hit").first.wait_for()
    for path in ("/ui/search?q=harbour", "/ui/sources", "/ui/agents", "/ui/agents/harbourmaster?run=1", "/ui/new-agent",
                 "/ui/agents/harbourmaster/edit", "/ui/tools", "/ui/tools/search"):
        page.goto(console.url + path)
        assert page.evaluate(UNLABELLED) == [], f"{path}: controls without a label"
    fresh = page.context.browser.new_context()
    login = fresh.new_page()
    login.goto(f"{console.url}/ui/login")
    assert login.evaluate(UNLABELLED) == []
    fresh.close()


def test_the_agents_pages_render(page: Any, console: Console, shoot) -> None:
    page.goto(f"{console.url}/ui/agents")
    assert "harbourmaster" in page.locator("main").inner_text()
    shoot(page, "agents")
    page.goto(f"{console.url}/ui/agents/harbourmaster?run=1")
    assert "from its manual" in page.locator("pre#prompt-get").inner_text()


def test_no_page_needs_more_than_its_csp_allows(page: Any, console: Console, events: Events) -> None:
    """Every page's scripts and styles load under the Content-Security-Policy: no inline script or
    style is blocked (a blocked one is logged as a console error)."""
    for path in ("/ui/search?q=harbour&explain=1", "/ui/doc?id=missing", "/ui/sources", "/ui/agents",
                 "/ui/agents/harbourmaster?run=1", "/ui/new-agent", "/ui/tools", "/ui/tools/search",
                 "/ui/doc?id=" + document_id("filesystem:docs", "manual.md"), "/ui/graph"):
        page.goto(console.url + path)
        page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    blocked = [e for e in events.errors if "Content Security Policy" in e or "Refused to" in e]
    assert blocked == [], f"blocked by the CSP: {blocked}"
    assert page.evaluate("() => typeof htmx") == "object", "htmx did not load under the CSP"
