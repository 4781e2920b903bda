"""The graph page at 1,000 notes (issue 50, 6), in headless Chromium against the real ``ctx serve --http``
over a workspace indexed by a real ``ctx sync``: two sources and nested folders of notes linked by
wikilinks, a tenth of them orphans. The canvas is drawn (pixels painted, every note laid out), zooms
by the wheel and by its buttons (names appear as it zooms in), a click on a note lights up its
neighbours and offers its page, which opens; the source and folder filters and the orphans toggle
narrow what is drawn and listed; axe-core finds nothing serious on the page; nothing is fetched from
another origin and the CSP is never violated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from browser.console import Console, Events
from browser.test_quality import axe, axe_script, blocking  # noqa: F401 (axe_script is a fixture)

pytestmark = pytest.mark.slow  # a 1,000-note sync and serve (~17 s) before the first test
COUNT = 1000
NOTES, JOURNAL = 700, 300  # notes in each source
FOLDERS = ["garden", "harbour", "kitchen/recipes", "kitchen/tools", ""]


def orphan(i: int) -> bool:
    return i % 10 == 9


def workspace() -> dict[str, str]:
    """1,000 notes: ``notes/`` (700, in nested folders) and ``journal/`` (300); each note not an
    orphan links to two or three others that are not, by wikilink; a tenth link nowhere and nothing
    links to them."""
    files = {}
    for i in range(COUNT):
        linked = [j for j in ((i * 7 + 3) % COUNT, (i * 13 + 5) % COUNT, (i + 1) % COUNT) if not orphan(j)]
        body = "" if orphan(i) else "See " + ", ".join(f"[[note-{j:04d}]]" for j in linked) + "."
        if i < NOTES:
            folder = FOLDERS[i % len(FOLDERS)]
            path = f"notes/{folder}/note-{i:04d}.md" if folder else f"notes/note-{i:04d}.md"
        else:
            path = f"journal/note-{i:04d}.md"
        files[path] = f"# Note {i:04d}\n\nAbout thing number {i}. {body}\n"
    return files


SERVE = {"embedding": "disabled", "files": workspace(),
         "extra": '[connectors.filesystem.notes]\nroot = "notes"\n\n[connectors.filesystem.journal]\nroot = "journal"\n'}
ALL = COUNT + 4  # and the four notes of the shared workspace's docs source


def laid_out(page: Any) -> None:
    """Wait until the layout has settled (d3-force's alpha under its minimum)."""
    page.locator("#graph[data-settled]").wait_for(timeout=60_000)


def test_a_thousand_notes_draw_zoom_and_open(page: Any, console: Console, events: Events, shoot) -> None:
    from playwright.sync_api import expect

    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{console.url}/ui/graph")
    laid_out(page)
    expect(page.locator("#graph")).to_have_attribute("data-drawn", str(ALL))
    assert page.locator("#graph-nodes li").count() == ALL
    assert page.locator("#graph canvas").count() == 1 and page.locator("#graph *").count() == 1  # one canvas
    assert page.evaluate("ctxGraph.state.ticks") > 50
    painted = page.evaluate("ctxGraph.painted()")
    assert painted > 5_000, painted  # a thousand points and their lines, not a blank canvas
    shoot(page, "graph-large")

    # Zoom: the wheel over the canvas, then the + button; names appear as it zooms in.
    start = float(page.locator("#graph").get_attribute("data-zoom") or page.evaluate("ctxGraph.state.t.k"))
    names_far = page.evaluate("ctxGraph.state.labels")
    box = page.locator("#graph canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    expect(page.locator("#graph")).to_have_attribute("data-zoom", re.compile(r"\d"))
    wheeled = float(page.locator("#graph").get_attribute("data-zoom"))
    assert wheeled > start * 1.5, (start, wheeled)
    page.get_by_role("button", name="Zoom in").click()
    page.wait_for_function(f"ctxGraph.state.t.k > {wheeled * 1.4}")
    page.wait_for_function(f"ctxGraph.state.labels > {max(names_far, 10)}")
    page.get_by_role("button", name="Fit").click()
    page.wait_for_function(f"ctxGraph.state.t.k < {wheeled}")

    # A click on the most linked note: it and its neighbours lit, its page one click away.
    busiest = page.evaluate("ctxGraph.busiest()")
    point = page.evaluate(f"ctxGraph.where({busiest!r})")
    page.mouse.click(point["x"], point["y"])
    panel = page.locator("#graph-selected")
    expect(panel.locator("strong")).to_have_text(re.compile(r"^Note \d{4}$"))
    title = panel.locator("strong").inner_text()
    assert page.evaluate("ctxGraph.state.selected.id") == busiest
    assert page.evaluate("ctxGraph.state.selected.near.size") >= 3
    assert re.search(r"links to \d+, linked from \d+", panel.inner_text())
    page.locator("#graph-open").click()
    page.wait_for_url(re.compile(r"/ui/doc\?id="))
    expect(page.locator("h1").first).to_have_text(title)

    assert all(url.startswith(console.url) for url in requested), [u for u in requested if not u.startswith(console.url)]
    assert events.errors == [] and events.dialogs == []


def test_filters_by_source_and_folder_and_the_orphans_toggle(page: Any, console: Console, events: Events) -> None:
    from playwright.sync_api import expect

    page.goto(f"{console.url}/ui/graph")
    page.locator("#graph[data-drawn]").wait_for()
    page.select_option("#graph-source", "filesystem:journal")
    page.locator("form.graph-filters button").click()
    page.wait_for_url(re.compile(r"source=filesystem%3Ajournal"))
    expect(page.locator("#graph")).to_have_attribute("data-drawn", str(JOURNAL))
    assert page.locator("#graph-nodes li").count() == JOURNAL
    assert page.locator("#graph-nodes li .path", has_text="filesystem:notes").count() == 0

    # A folder and its subfolders: kitchen holds kitchen/recipes and kitchen/tools (2 of every 5 notes).
    page.select_option("#graph-source", "filesystem:notes")
    page.select_option("#graph-folder", "kitchen")
    page.locator("form.graph-filters button").click()
    page.wait_for_url(re.compile(r"folder=kitchen"))
    kitchen = sum(1 for i in range(NOTES) if FOLDERS[i % len(FOLDERS)].startswith("kitchen"))
    expect(page.locator("#graph")).to_have_attribute("data-drawn", str(kitchen))
    laid_out(page)

    # Orphans: faded by default, hidden at once by the toggle (and from the lists once applied).
    with_orphans = int(page.locator("#graph").get_attribute("data-drawn"))
    lonely = page.evaluate("[...document.querySelectorAll('#graph-nodes li .path')]"
                           ".filter(e => e.textContent.endsWith(' 0 link(s)')).length")
    assert lonely >= sum(1 for i in range(NOTES) if orphan(i) and FOLDERS[i % len(FOLDERS)].startswith("kitchen"))
    page.check("#graph-orphans")
    expect(page.locator("#graph")).to_have_attribute("data-drawn", str(with_orphans - lonely))
    page.locator("form.graph-filters button").click()
    page.wait_for_url(re.compile(r"orphans=hide"))
    assert page.locator("#graph-nodes li").count() == with_orphans - lonely
    assert events.errors == [] and events.dialogs == []


def test_axe_finds_nothing_serious_on_the_graph_of_a_thousand_notes(page: Any, console: Console,
                                                                    axe_script: Path) -> None:  # noqa: F811
    page.goto(f"{console.url}/ui/graph")
    laid_out(page)
    found = axe(page, axe_script)
    assert found["passes"] >= 10, found
    assert blocking(found) == []


@pytest.mark.parametrize("asked", ["/ui/graph.json", "/ui/graph.json?source=filesystem:journal&orphans=hide"])
def test_the_data_is_bounded_and_narrowed(page: Any, console: Console, asked: str) -> None:
    data = page.evaluate(f"fetch({asked!r}).then(r => r.json())")
    assert data["total"] == ALL and data["sources"] == ["filesystem:docs", "filesystem:journal", "filesystem:notes"]
    assert "kitchen/recipes" in data["folders"] and "kitchen" in data["folders"]
    if "journal" in asked:
        assert {n["source"] for n in data["nodes"]} == {"filesystem:journal"}
        assert all(n["links"] > 0 for n in data["nodes"]) and len(data["nodes"]) < JOURNAL
    else:
        assert len(data["nodes"]) == ALL and len(data["edges"]) > COUNT
