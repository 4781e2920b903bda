"""The console as a web app should be (issue 42, 6), in headless Chromium against the real ``ctx serve
--http``: axe-core finds no serious or critical violation on any page, at a desktop's width and a
phone's; the keyboard reaches every control of every page from a skip link on, each with a visible
focus outline, and leaves each page (the graph and the note editor included) with no trap; at 375 px wide no page scrolls sideways, the
navigation wraps and a wide table scrolls inside its own box; the login page shows no navigation.

axe-core comes from the npm registry at a pinned version (tests/axe/install.sh, cached); the axe test
skips, naming the reason, only when npm or the registry cannot be reached. It is served to the page
from the console's own origin (a Playwright route), so the page keeps its real Content-Security-Policy,
which allows no inline script."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from browser.console import Console, Events, log_in, open_page

from context_harness.store.records import document_id
from support.paths import REPO

# A note wider than a phone: a table of many columns, a long line of code, a long unbroken word.
WIDE = ("# Wide note\n\n| " + " | ".join(f"column {n}" for n in range(12)) + " |\n|" + "---|" * 12 + "\n| "
        + " | ".join(f"value-{n}-of-the-measurement" for n in range(12)) + " |\n\n```\n"
        + "const figures = [" + ", ".join(str(n * 1000) for n in range(60)) + "];\n```\n\n"
        + "averyveryverylongwordwithoutanyspace" * 4 + "\n")
SERVE = {"extra": '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n\n'
                  '[tools.script.signal]\npath = "tools/signal.lua"\n',
         "files": {"notes/projects/garden-shed/permit.md": "# Shed permit\n\nThe council's planning permit.\n",
                   "notes/plan.md": "# Garden plan\n\nFirst [[garden-shed/permit]], then build the shed.\n",
                   "notes/wide.md": WIDE,
                   "tools/signal.lua": 'tool = { description = "Signal a boat", parameters = {\n'
                   '  { name = "word", type = "string", required = true, description = "What to signal" },\n'
                   '  { name = "loud", type = "boolean", default = false, description = "Upper-case it" } } }\n'
                   "function tool.execute(params) return { said = params.word } end\n",
                   # An agent whose arguments have allowed values: "Try it" offers them as selects.
                   "agents/pilot.md": "---\nname: pilot\ndescription: Guides boats.\narguments:\n"
                   "  - name: hour\n    description: When to sail\n    enum: [dawn, noon]\n    default: noon\n"
                   "  - name: berth\n    required: true\n    enum: [east quay, west quay]\n"
                   "---\nGuide the boat to {{berth}} at {{hour}}.\n"}}
MANUAL = document_id("filesystem:docs", "manual.md")
PERMIT = document_id("filesystem:notes", "projects/garden-shed/permit.md")
# Every page of the console a logged-in user can open by a link (the login page is checked apart).
PAGES = {
    "search": "/ui/search",
    "search results": "/ui/search?q=harbour",
    "explain": "/ui/search?q=which+engine+ranks+documents&mode=hybrid&explain=1",
    "document": f"/ui/doc?id={MANUAL}&chunk=3#chunk-3",
    "note": f"/ui/doc?id={PERMIT}",
    "wide note": f"/ui/doc?id={document_id('filesystem:notes', 'wide.md')}",
    "note edit": f"/ui/notes/edit?id={PERMIT}",
    "note new": "/ui/notes/new",
    "trash": "/ui/trash",
    "graph": "/ui/graph",
    "graph of a note": f"/ui/graph?id={PERMIT}",
    "tools": "/ui/tools",
    "tool form": "/ui/tools/signal",
    "agents": "/ui/agents",
    "agent": "/ui/agents/harbourmaster?run=1",
    "agent with choices": "/ui/agents/pilot?run=1&berth=east+quay",
    "agent builder": "/ui/new-agent",
    "agent edit": "/ui/agents/harbourmaster/edit",
    "runs": "/ui/runs",
    "sources": "/ui/sources",
    "not found": "/ui/doc?id=no-such-document",
}
BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def axe_script() -> Path:
    """axe.min.js, installed by tests/axe/install.sh (exit 3: no npm; 4: the registry is unreachable)."""
    done = subprocess.run(["sh", str(REPO / "tests" / "axe" / "install.sh")], capture_output=True, text=True,
                          timeout=300)
    if done.returncode in (3, 4):
        pytest.skip(f"axe-core could not be installed from the npm registry: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def axe(page: Any, script: Path) -> dict[str, Any]:
    """axe-core's findings on the page as it is: its violations (rule, impact, help, the elements) and
    how many rules passed."""
    origin = page.url.split("/ui/")[0]
    page.route(f"{origin}/ui/static/axe.min.js",
               lambda route: route.fulfill(path=str(script), content_type="text/javascript"))
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(url="/ui/static/axe.min.js")
    return page.evaluate("""async () => {
      const found = await axe.run(document, {resultTypes: ["violations"]});
      return {passes: found.passes.length, violations: found.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)}))};
    }""")


def settle(page: Any) -> None:
    page.wait_for_load_state("load")
    if "/ui/graph" in page.url:
        page.locator("#graph[data-drawn]").wait_for()


def blocking(found: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in found["violations"] if v["impact"] in BLOCKING]


def test_axe_finds_no_serious_or_critical_violation_on_any_page(browser: Any, page: Any, console: Console,
                                                                events: Events, axe_script: Path) -> None:
    report: dict[str, list[dict[str, Any]]] = {}
    for name, path in PAGES.items():
        page.goto(console.url + path)
        settle(page)
        found = axe(page, axe_script)
        assert found["passes"] >= 10, f"{name}: axe checked almost nothing ({found})"
        report[name] = blocking(found)
    # Pages a form leads to: a tool's result, a note's edit meeting a change on disk, a trash entry.
    page.goto(console.url + "/ui/tools/signal")
    page.fill("#arg-word", "ahoy")
    page.locator("#tool-form button[type=submit]").click()
    page.locator("pre#tool-result").wait_for()
    report["tool result"] = blocking(axe(page, axe_script))
    page.goto(console.url + f"/ui/notes/edit?id={PERMIT}")
    (console.root / "notes" / "projects" / "garden-shed" / "permit.md").write_text(
        "# Shed permit\n\nThe council's permit, renewed.\n", encoding="utf-8")
    page.locator("#note-text").fill("# Shed permit\n\nMine.\n")
    page.click("button[value=save]")
    page.locator("section.conflict").wait_for()
    report["note conflict"] = blocking(axe(page, axe_script))
    page.goto(console.url + f"/ui/doc?id={document_id('filesystem:notes', 'plan.md')}")
    page.locator("button", has_text="Delete").click()
    page.wait_for_url(re.compile(r"/ui/trash\?done="))
    assert page.locator("button", has_text="Restore").count() == 1
    report["trash with a note"] = blocking(axe(page, axe_script))
    page.locator("button", has_text="Restore").click()  # the other tests follow its link from the permit
    page.wait_for_url(re.compile(r"/ui/doc\?id="))
    phone = browser.new_context(viewport=PHONE).new_page()  # the same pages laid out for a phone
    log_in(phone, console.url)
    for name, path in PAGES.items():
        phone.goto(console.url + path)
        settle(phone)
        report[f"{name} (phone)"] = blocking(axe(phone, axe_script))
    phone.context.close()
    login = open_page(browser, Events())
    login.goto(console.url + "/ui/login")
    report["login"] = blocking(axe(login, axe_script))
    login.fill("#token", "not-the-token")
    login.click("form button[type=submit]")
    login.locator("p.error").wait_for()
    report["login refused"] = blocking(axe(login, axe_script))
    login.context.close()
    assert {name: found for name, found in report.items() if found} == {}


KEY = """const key = e => [e.tagName, e.id, e.getAttribute("href"), e.name, e.value,
  (e.textContent || "").trim().slice(0, 40)].join("|");"""  # the same for a row the sources page swaps in anew
TABBABLE = "() => { " + KEY + """
  return [...document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]")]
    .filter(e => !e.disabled && e.tabIndex >= 0 && e.checkVisibility({visibilityProperty: true})).map(key); }"""
FOCUSED = "() => { " + KEY + """ const e = document.activeElement;
  if (!e || e === document.body) return {at: "body"};
  const style = getComputedStyle(e);
  return {at: key(e), skip: e.classList.contains("skip"),
          outline: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2,
          html: e.outerHTML.slice(0, 120)}; }"""


def tab_through(page: Any) -> tuple[set[str], list[dict[str, Any]]]:
    """Tab from the top of the page until the focus leaves it (back to the body or the skip link):
    the elements that can take the focus, and each focus Tab gave, in order. Bounded: a trap never ends."""
    tabbable = set(page.evaluate(TABBABLE))
    count = len(tabbable)
    # Start from the top even when the URL's fragment (#chunk-N) moved the starting point of Tab there.
    page.evaluate("() => { const top = document.documentElement; top.tabIndex = -1; top.focus();"
                  " top.removeAttribute('tabindex'); top.blur(); window.scrollTo(0, 0); }")
    visits: list[dict[str, Any]] = []
    for _ in range(3 * count + 10):  # a date field takes three presses, one per part
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED)
        if visits and (now["at"] == "body" or now.get("skip")):
            return tabbable, visits
        visits.append(now)
    pytest.fail(f"{page.url}: the focus never left the page after {len(visits)} Tabs (a trap): {visits[-5:]}")


def test_the_keyboard_reaches_every_control_with_a_visible_focus_and_no_trap(page: Any, console: Console) -> None:
    for name, path in PAGES.items():
        page.goto(console.url + path)
        settle(page)
        tabbable, visits = tab_through(page)
        assert visits[0].get("skip"), f"{name}: the first Tab does not reach the skip link: {visits[0]}"
        reached = {v["at"] for v in visits}
        assert reached == tabbable, f"{name}: Tab missed {tabbable - reached}, reached {reached - tabbable} besides"
        unmarked = [v["html"] for v in visits if not v["outline"]]
        assert unmarked == [], f"{name}: no visible focus outline on {unmarked}"

    # The skip link leads past the header: Enter on it, and the next Tab is in the page's own content.
    page.goto(console.url + "/ui/search")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to the content"
    assert page.locator("a.skip").bounding_box()["y"] >= 0, "the skip link stays off screen when focused"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "q"

    # The graph by keyboard alone: its lists open with Enter, a document opens from them.
    page.goto(console.url + f"/ui/graph?id={PERMIT}")
    settle(page)
    page.locator("details.graph-lists summary").focus()
    page.keyboard.press("Enter")
    listed = []
    for _ in range(4):  # the neighbourhood's two documents, in the order listed
        page.keyboard.press("Tab")
        listed.append(page.evaluate("() => document.activeElement.textContent"))
        if listed[-1] == "Garden plan":
            break
    assert listed[-1] == "Garden plan", f"Tab in the opened lists reached {listed}"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/ui/doc\?id="))
    assert page.locator("main > h1").inner_text() == "Garden plan"

    # The note editor: Tab leaves the text box (it types no tab character) and reaches Preview, which
    # Enter presses.
    page.goto(console.url + f"/ui/notes/edit?id={PERMIT}")
    page.locator("#note-text").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.value") == "preview"
    page.keyboard.press("Enter")
    page.locator("article.preview").wait_for()


PHONE = {"width": 375, "height": 740}
OVERFLOW = """() => ({page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  nav: [...document.querySelectorAll("header nav a")].filter(a => a.getBoundingClientRect().right > innerWidth)
       .map(a => a.textContent),
  tables: [...document.querySelectorAll(".table-box")].map(b => b.scrollWidth > b.clientWidth),
  times: [...document.querySelectorAll("time")].filter(t => t.getClientRects().length !== 1).map(t => t.textContent)})"""


def test_every_page_fits_a_phone_screen(browser: Any, console: Console) -> None:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    log_in(page, console.url)
    for name, path in PAGES.items():
        page.goto(console.url + path)
        settle(page)
        fit = page.evaluate(OVERFLOW)
        assert fit["page"] <= 0, f"{name}: the page scrolls sideways by {fit['page']} px at 375 px"
        assert fit["nav"] == [], f"{name}: navigation links off screen: {fit['nav']}"
        assert fit["times"] == [], f"{name}: times broken over lines: {fit['times']}"
    page.goto(console.url + "/ui/sources")
    assert page.evaluate(OVERFLOW)["tables"][0] is True, "the sources table does not scroll inside its box"
    assert page.locator("td.last-sync time").count() >= 1
    box = page.locator(".table-box").first  # then the sync history's tables, one per source
    box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
    assert box.evaluate("b => b.scrollLeft") > 0
    page.goto(console.url + PAGES["wide note"])  # a note's own table too, its words kept whole
    assert page.evaluate(OVERFLOW)["tables"] == [True], "the note's table does not scroll inside its box"
    assert page.locator("article.markdown .table-box th").first.evaluate("e => e.offsetHeight < 40")
    context.close()


def test_the_login_page_shows_no_navigation(browser: Any, console: Console, events: Events) -> None:
    page = open_page(browser, events)
    page.goto(console.url + "/ui/login")
    assert page.locator("header nav, header form").count() == 0, "the login page shows the nav or Log out"
    log_in(page, console.url)
    page.goto(console.url + "/ui/sources")
    assert page.locator("header nav a[aria-current=page]").inner_text() == "Sources"
    assert page.locator("header button", has_text="Log out").count() == 1
    page.context.close()
