"""Right-to-left text in the console (issue 48, 5), in headless Chromium against the real ``ctx serve
--http``: an Arabic note's title, headings, paragraphs, its hit's title and snippet carry
``dir="auto"``, so the browser lays them out right to left, while an English paragraph in the same note
and the page's own English stay left to right."""

from __future__ import annotations

from typing import Any

from browser.console import Console

from context_harness.store.records import document_id

ARABIC = """# دليل الإصدار

يجب تشغيل اختبارات الانحدار في بيئة ما قبل الإصدار قبل كل إصدار.

## الخطوات

- سجّل نافذة الإصدار
- The on-call engineer tags the release.

An English paragraph in the Arabic note stays left to right.
"""
SERVE = {"embedding": "disabled", "files": {"docs/release-ar.md": ARABIC}}


def direction(locator: Any) -> str:
    return str(locator.evaluate("element => getComputedStyle(element).direction"))


def test_an_arabic_note_reads_right_to_left(page: Any, console: Console) -> None:
    page.goto(f"{console.url}/ui/doc?id={document_id('filesystem:docs', 'release-ar.md')}")
    title = page.locator("main h1").first
    assert title.inner_text() == "دليل الإصدار"
    assert title.get_attribute("dir") == "auto" and direction(title) == "rtl"
    article = page.locator("article.markdown")
    arabic = article.locator("p", has_text="اختبارات الانحدار")
    english = article.locator("p", has_text="An English paragraph")
    assert arabic.get_attribute("dir") == "auto" and direction(arabic) == "rtl"
    assert direction(english) == "ltr"
    assert direction(article.locator("h2", has_text="الخطوات")) == "rtl"
    assert [direction(item) for item in article.locator("li").all()] == ["rtl", "ltr"]
    section = page.locator("nav.toc a", has_text="الخطوات")
    assert section.get_attribute("dir") == "auto" and direction(section) == "rtl"
    assert direction(page.locator("p.path").first) == "ltr"  # the console's own text


def test_an_arabic_hit_reads_right_to_left(page: Any) -> None:
    page.fill("#q", "الانحدار")
    page.select_option("#mode", "keyword")
    page.click("form.search button[type=submit]")
    hit = page.locator("#results li.hit").first
    hit.wait_for()
    link, snippet = hit.locator("a").first, hit.locator("p.snippet")
    assert link.inner_text() == "دليل الإصدار"
    assert link.get_attribute("dir") == "auto" and direction(link) == "rtl"
    assert snippet.get_attribute("dir") == "auto" and direction(snippet) == "rtl"
    assert direction(hit.locator("span.score")) == "ltr"
