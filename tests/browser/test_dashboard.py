"""The sources dashboard in headless Chromium against the real ``ctx serve --http`` (the bundled model
embeds): the figures the ``sources`` tool reports, and while the server embeds a batch of new notes in
the background, the live row and figures say they are being embedded now — never "awaiting" and never
`ctx embed pending` — until every chunk is embedded, all without a reload."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx2
from browser.console import TOKEN, Console, Events

ROW = "#source-rows tr[data-source='filesystem:docs']"
NEW_NOTES = 150  # of ~100 words each: seconds of background embedding on 2 cores
EMBEDDED_WAIT_S = 120  # the batch is embedded well within this, even on a loaded machine


def sources_tool(url: str) -> dict[str, Any]:
    with httpx2.Client(base_url=url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=15) as http:
        answer = http.post("/tools/sources", json={}).json()
    return next(s for s in answer["sources"] if s["name"] == "filesystem:docs")


def cell(page: Any, column: str) -> str:
    return " ".join(page.locator(f"{ROW} td.{column}").inner_text().split())


def test_the_dashboard_shows_the_figures_and_says_what_is_being_embedded(page: Any, console: Console,
                                                                           events: Events, shoot) -> None:
    page.goto(f"{console.url}/ui/sources")
    source = sources_tool(console.url)
    tds = [" ".join(t.split()) for t in page.locator(f"{ROW} td").all_inner_texts()]
    assert tds[2:4] == [str(source["document_count"]), str(source["chunk_count"])]
    assert int(page.get_attribute(f"{ROW} td.size data", "value") or 0) > 0
    chunks = source["chunk_count"]
    assert cell(page, "embedding") == f"{chunks} of {chunks} embedded"
    assert cell(page, "last-sync") == "never" or cell(page, "last-sync").endswith(" · ok")
    assert page.locator("#history ul.changes li").count() == len(list(console.docs.iterdir()))
    assert page.inner_text("#total-documents") == f"{source['document_count']} in 1 source"
    assert page.inner_text("#total-chunks") == str(chunks)
    page.evaluate("() => { window.notReloaded = true; }")

    words = " ".join(f"word{n}" for n in range(100))
    for n in range(NEW_NOTES):
        (console.docs / f"batch-{n:03}.md").write_text(f"# Crossing {n}\n\nFerry crossing {n}: {words}\n",
                                                       encoding="utf-8")
    seen: list[str] = []
    deadline = time.monotonic() + EMBEDDED_WAIT_S
    while time.monotonic() < deadline:
        text = cell(page, "embedding")
        if not seen or seen[-1] != text:
            seen.append(text)
        if "being embedded now" in text:
            shoot(page, "sources-embedding")
        done = re.fullmatch(r"(\d+) of \1 embedded", text)
        if done and int(done.group(1)) >= chunks + NEW_NOTES:
            break
        page.wait_for_timeout(200)
    after = sources_tool(console.url)
    assert seen[-1] == f"{after['chunk_count']} of {after['chunk_count']} embedded", json.dumps(seen)
    assert after["document_count"] == source["document_count"] + NEW_NOTES and after["pending_chunks"] == 0
    assert any("being embedded now" in text for text in seen), json.dumps(seen)
    assert not any("being embedded now" in text and "awaiting" in text for text in seen)
    assert "ctx embed pending" not in page.inner_text("main")
    assert page.evaluate("() => window.notReloaded === true"), "the page reloaded instead of updating in place"
    assert events.dialogs == [] and events.errors == []
    assert page.locator(f"{ROW} td").nth(2).inner_text().strip() == str(after["document_count"])
    page.wait_for_function("n => document.querySelector('#total-documents').textContent.startsWith(n)",
                           arg=f"{after['document_count']} in 1 source")  # the figures follow too
    assert " ".join(page.inner_text("#embedding-summary").split()).startswith(
        f"{after['chunk_count']} of {after['chunk_count']} chunks embedded by local:")
