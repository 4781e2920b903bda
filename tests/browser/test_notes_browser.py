"""Reading and writing notes in headless Chromium against the real ``ctx serve --http`` with a
writable folder: a new note rendered as Markdown, its wikilink (a partial path) followed to the
linked note whose backlinks list it, Edit with a preview, a change on disk meanwhile shown beside the
user's text and the user's choice saved, Delete and Restore from the trash. With ``CTX_SCREENSHOTS=1``
the same tests save the pictures of docs/how-to/web-console.md."""

from __future__ import annotations

import re
from typing import Any

from browser.console import Console, Events

from context_harness.store.records import document_id

SHED = re.compile(re.escape("/ui/doc?id=" + document_id("filesystem:notes", "shed.md")) + "$")
PERMIT = re.compile(re.escape("/ui/doc?id=" + document_id("filesystem:notes", "projects/garden-shed/permit.md")) + "$")
UNLABELLED = """() => [...document.querySelectorAll("input, select, textarea")]
  .filter(e => e.type !== "hidden" && e.labels.length === 0 && !e.getAttribute("aria-label"))
  .map(e => e.outerHTML)"""
SERVE = {"embedding": "disabled", "extra": '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n',
         "files": {"notes/projects/garden-shed/permit.md": "# Shed permit\n\nThe council's planning permit.\n"}}


def test_write_read_edit_with_a_conflict_delete_and_restore(page: Any, console: Console, events: Events,
                                                            shoot) -> None:
    from playwright.sync_api import expect  # installed: the page fixture skips otherwise

    page.click("header nav a:text('New note')")
    assert page.evaluate(UNLABELLED) == []
    page.select_option("#note-source", "filesystem:notes")
    page.fill("#note-path", "shed.md")
    page.fill("#note-title", "Shed")
    page.fill("#note-text", "Paint the shed **green**.\n\n| Wall | Coats |\n|---|---|\n| north | 2 |\n\n"
              "Before building, read [[garden-shed/permit]].\n")
    page.click("form#note-form button")
    page.wait_for_url(SHED)
    article = page.locator("article.markdown")
    expect(article.locator("strong")).to_have_text("green")
    expect(article.locator("td").first).to_have_text("north")
    assert (console.root / "notes" / "shed.md").read_text(encoding="utf-8").startswith("# Shed\n\nPaint the shed")
    shoot(page, "note")
    article.locator("a.wikilink").click()
    page.wait_for_url(PERMIT)
    expect(page.locator("h1").first).to_have_text("Shed permit")
    page.locator("aside.connections a", has_text="Shed").click()

    page.locator("a.button", has_text="Edit").click()
    assert page.evaluate(UNLABELLED) == []
    editor = page.locator("#note-text")
    assert editor.input_value().startswith("# Shed\n\nPaint the shed **green**.")
    editor.fill("# Shed\n\nPaint the shed **blue**.\n")
    page.click("button[value=preview]")
    expect(page.locator("article.preview strong")).to_have_text("blue")
    assert "green" in (console.root / "notes" / "shed.md").read_text(encoding="utf-8"), "a preview saves nothing"
    page.click("button[value=save]")
    page.wait_for_url(re.compile(r"/ui/doc\?"))
    expect(page.locator("article.markdown strong")).to_have_text("blue")

    page.locator("a.button", has_text="Edit").click()
    (console.root / "notes" / "shed.md").write_text("# Shed\n\nSomeone else chose red.\n", encoding="utf-8")
    page.locator("#note-text").fill("# Shed\n\nPaint the shed **yellow**.\n")
    page.click("button[value=save]")
    conflict = page.locator("section.conflict")
    expect(conflict).to_be_visible()
    expect(conflict.locator("article.theirs")).to_contain_text("Someone else chose red.")
    assert page.locator("#note-text").input_value() == "# Shed\n\nPaint the shed **yellow**.\n"
    assert (console.root / "notes" / "shed.md").read_text(encoding="utf-8") == "# Shed\n\nSomeone else chose red.\n"
    shoot(page, "conflict", full_page=True)
    page.click("button[value=save]")
    page.wait_for_url(re.compile(r"/ui/doc\?"))
    expect(page.locator("article.markdown strong")).to_have_text("yellow")
    assert (console.root / "notes" / "shed.md").read_text(encoding="utf-8") == "# Shed\n\nPaint the shed **yellow**.\n"

    assert page.evaluate(UNLABELLED) == []  # the note's page: its move field
    page.locator("button", has_text="Delete").click()
    page.wait_for_url(re.compile(r"/ui/trash\?done="))
    assert not (console.root / "notes" / "shed.md").exists()
    page.locator("button", has_text="Restore").click()
    page.wait_for_url(SHED)
    expect(page.locator("article.markdown strong")).to_have_text("yellow")
    expected = ("Content Security Policy", "409 (Conflict)")  # the conflict page's status is logged as an error
    assert events.dialogs == [] and [e for e in events.errors if not any(x in e for x in expected)] == []


def test_the_graph_draws_offline_under_the_csp(page: Any, console: Console, events: Events, shoot) -> None:
    """The graph library (d3-force) is served by the console itself (no CDN) and runs under its CSP: no violation,
    no inline style of its own; the neighbourhood of a note is drawn, a click on a node opens it."""
    from playwright.sync_api import expect

    page.goto(f"{console.url}/ui/notes/new")
    page.select_option("#note-source", "filesystem:notes")
    page.fill("#note-path", "plan.md")
    page.fill("#note-text", "# Garden plan\n\nFirst [[garden-shed/permit]], then build the [[Shed]]; "
              "see [the harbour](../docs/manual.md).\n")
    page.click("form#note-form button")
    page.wait_for_url(re.compile(r"/ui/doc\?"))
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{console.url}/ui/graph")
    expect(page.locator("#graph[data-drawn]")).to_have_attribute("data-drawn", str(len(page.locator(
        "#graph-nodes li").all())))
    assert page.locator("#graph canvas").count() >= 1
    shoot(page, "graph")
    assert all(url.startswith(console.url) for url in requested), requested
    assert events.errors == [] and events.dialogs == []
    page.goto(f"{console.url}/ui/graph?id=" + document_id("filesystem:notes", "projects/garden-shed/permit.md"))
    expect(page.locator("#graph")).to_have_attribute("data-drawn", "2")  # the permit and the plan linking to it
    page.locator("details.graph-lists summary").click()
    assert page.locator("#graph-edges li", has_text="Garden plan → Shed permit").count() == 1
    assert events.errors == []
