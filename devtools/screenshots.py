"""The pictures of the web console in the docs (``docs/img/console-*.png``), taken afresh.

    python -m devtools.screenshots [--only NAME ...] [--out docs/img]

Builds a scratch workspace around the bundled sample knowledge base (context-harness's own docs, as
``ctx demo`` indexes them, embedded with the bundled model) plus a writable notes folder, an agent with
two skills and a Lua tool; indexes it with ``ctx sync``; starts ``ctx serve --http`` on 127.0.0.1 with a
token; then drives headless Chromium through the pages the docs show (Playwright with the system
browser, as ``tests/browser`` does: ``CTX_TEST_CHROMIUM``, ``chromium`` on PATH, or
``/usr/bin/chromium``; Playwright never downloads one) and saves each window as
``console-NAME.png``. Nothing of the repository is written but the pictures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOKEN = "screenshots-token"
WINDOW = {"width": 1100, "height": 760}
PHONE = {"width": 375, "height": 740}
WAIT_MS = 30_000

PERMIT = "# Shed permit\n\nThe council's planning permit: a shed under 2.5 m needs none.\n"
NOTE = ("Paint the shed **green**, two coats on the weather side.\n\n| Wall | Coats |\n|---|---|\n| north | 2 |\n"
        "| south | 1 |\n\nBefore building, read [[garden-shed/permit]].\n")
AGENT = ("---\nname: guide\ndescription: Explains context-harness from its own documentation.\ntools: search, get\n"
         "skills:\n- cite-sources\n- plain-words\ndisabled_skills:\n- plain-words\narguments:\n- name: topic\n"
         "  description: What to explain\n  required: true\n---\n\n"
         "You explain {{topic}} to a new user, from the context-harness documentation.\n")
SKILLS = {
    "cite-sources": ("Quality", "Name the page each answer comes from.", "End every answer with the pages it used."),
    "plain-words": ("Style", "Short sentences, no jargon.", "Explain each technical word the first time."),
}
SIGNAL_LUA = """tool = {
  description = "Signal a boat: repeat a word, loud or not",
  parameters = {
    { name = "word", type = "string", required = true, description = "What to signal" },
    { name = "times", type = "integer", default = 1, description = "How many times" },
    { name = "flag", type = "string", default = "red", enum = { "red", "green" }, description = "Which flag" },
    { name = "loud", type = "boolean", default = false, description = "Upper-case it" },
  },
}
function tool.execute(params, context)
  local words = {}
  for i = 1, params.times do words[i] = params.word end
  local said = table.concat(words, " ")
  if params.loud then said = said:upper() end
  return { said = said, flag = params.flag }
end
"""


def chromium() -> str:
    found = os.environ.get("CTX_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(found).exists():
        sys.exit("screenshots: no Chromium: install Debian's chromium package or set CTX_TEST_CHROMIUM")
    return found


def workspace(root: Path) -> Path:
    """The scratch workspace; returns its config file."""
    from context_harness.sample import DOCS, GENERATED

    files = {"notes/projects/garden-shed/permit.md": PERMIT, "agents/guide.md": AGENT, "tools/signal.lua": SIGNAL_LUA}
    for name, (category, description, text) in SKILLS.items():
        files[f"skills/{name}/SKILL.md"] = (f"---\nname: {name}\ndescription: {description}\ncategory: {category}\n"
                                           f"---\n\n{text}\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    config = root / "ctx.toml"
    config.write_text(
        f'[db]\npath = "data/ctx.sqlite"\n\n[server]\nsync_on_start = false\nauth_token = "{TOKEN}"\n\n'
        '[agents]\npaths = ["agents"]\nskill_paths = ["skills"]\n\n'
        '[tools.script.signal]\npath = "tools/signal.lua"\n\n'
        f"[connectors.filesystem.sample]\nroot = {json.dumps(DOCS.as_posix())}\n"
        f"exclude_globs = {json.dumps(list(GENERATED))}\n\n"
        '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n', encoding="utf-8")
    return config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(config: Path, env: dict[str, str]) -> Iterator[str]:
    """``ctx serve --http`` over ``config`` on 127.0.0.1; yields its base URL."""
    import httpx2

    port = free_port()
    proc = subprocess.Popen([str(BIN / "ctx"), "serve", "--http", "--bind", f"127.0.0.1:{port}", "--config",
                             str(config)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx2.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                time.sleep(0.1)
        else:
            sys.exit("screenshots: ctx serve --http did not come up")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


class Shots:
    """Takes the pictures: each method opens one page as a user would and saves it."""

    def __init__(self, browser: Any, url: str, root: Path, out: Path) -> None:
        self.url, self.root, self.out = url, root, out
        self.keep = True  # False: a picture taken only to reach the next ones, into a scratch folder
        self.context = browser.new_context(viewport=WINDOW)
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.browser = browser

    def save(self, name: str, full_page: bool = False, page: Any = None) -> None:
        path = self.out / f"console-{name}.png"
        (page or self.page).screenshot(path=str(path), full_page=full_page)
        if self.keep:
            print(path, file=sys.stderr)

    def go(self, path: str) -> Any:
        self.page.goto(self.url + path)
        self.page.wait_for_load_state("load")
        return self.page

    def login(self) -> None:
        page = self.go("/ui/search")
        page.locator("#token").wait_for()
        self.save("login")
        page.fill("#token", TOKEN)
        page.click("form button[type=submit]")
        page.wait_for_url(f"{self.url}/ui/search")

    def search(self) -> None:
        page = self.go("/ui/search")
        page.fill("#q", "how do I connect a client")
        page.select_option("#mode", "keyword")
        page.click("form.search button[type=submit]")
        page.locator("#results li.hit").first.wait_for()
        self.save("search")

    def explain(self) -> None:
        page = self.go("/ui/search?q=how+do+I+connect+a+client&mode=hybrid&explain=1")
        page.locator("#results li.hit svg.bars").first.wait_for()
        page.locator("details.about-scores summary").click()
        self.save("explain")

    def document(self) -> None:
        page = self.go("/ui/search?q=wikilinks+partial+paths&mode=keyword")
        page.locator("#results li.hit a").first.click()
        page.wait_for_url(lambda url: "/ui/doc?" in url)
        page.wait_for_load_state("load")
        self.save("document")

    def note(self) -> None:
        page = self.go("/ui/notes/new")
        page.select_option("#note-source", "filesystem:notes")
        page.fill("#note-path", "projects/shed.md")
        page.fill("#note-title", "Shed")
        page.fill("#note-text", NOTE)
        page.click("form#note-form button")
        page.wait_for_url(lambda url: "/ui/doc?" in url)
        self.save("note")

    def conflict(self) -> None:
        page = self.go("/ui/search?q=Shed&mode=keyword&source=filesystem:notes")
        page.locator("#results li.hit a", has_text="Shed").first.click()
        page.wait_for_url(lambda url: "/ui/doc?" in url)
        page.locator("a.button", has_text="Edit").click()
        page.locator("#note-text").wait_for()
        (self.root / "notes" / "projects" / "shed.md").write_text(
            "# Shed\n\nSomeone else chose **red** paint, one coat.\n", encoding="utf-8")
        page.locator("#note-text").fill("# Shed\n\nPaint the shed **yellow**, two coats.\n")
        page.click("button[value=save]")
        page.locator("section.conflict").wait_for()
        self.save("conflict", full_page=True)
        page.click("button[value=save]")
        page.wait_for_url(lambda url: "/ui/doc?" in url)

    def graph(self) -> None:
        from context_harness.store.records import document_id

        page = self.go("/ui/graph?id=" + document_id("filesystem:sample", "how-to/write-back.md"))
        page.locator("#graph[data-settled]").wait_for()  # the layout done, not still moving
        self.save("graph")

    def sources(self) -> None:
        self.go("/ui/sources")
        self.save("sources")

    def agents(self) -> None:
        self.go("/ui/agents")
        self.save("agents")

    def agent_editor(self) -> None:
        self.go("/ui/agents/guide/edit")
        self.save("agent-editor", full_page=True)

    def wait_text(self, selector: str, text: str) -> None:
        self.page.wait_for_function(
            "([s, t]) => { const e = document.querySelector(s); return !!e && e.textContent.includes(t); }",
            arg=[selector, text], timeout=WAIT_MS)

    def agent_builder(self) -> None:
        """A new agent in the builder, not saved: a tool ticked, two argument rows, the live preview."""
        page = self.go("/ui/new-agent")
        page.fill("#name", "ferry")
        page.fill("#description", "Plans a ferry crossing.")
        page.fill("#system_prompt", "Take the ferry to {{island}} at {{hour}}.")
        page.check("#tool-search")
        page.fill("#arg-0-name", "island")
        page.check("#arg-0-required")
        page.fill("#arg-0-sample", "Seal Island")
        page.click("#add-argument")
        page.fill("#arg-1-name", "hour")
        page.fill("#arg-1-enum", "dawn, noon")
        page.fill("#arg-1-default", "noon")
        page.fill("#arg-1-sample", "dawn")
        self.wait_text("#preview-prompt", "Take the ferry to Seal Island at dawn.")
        self.save("agent-builder", full_page=True)
        page.click("#try-button")
        page.locator("#try-compiled").wait_for()
        self.save("agent-builder-try", full_page=True)

    def sources_embedding(self) -> None:
        """The sources dashboard while the server embeds a batch of notes dropped into the watched folder."""
        self.go("/ui/sources")
        words = " ".join(f"word{n}" for n in range(100))
        for n in range(150):
            path = self.root / "notes" / "crossings" / f"crossing-{n:03}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Crossing {n}\n\nFerry crossing {n}: {words}\n", encoding="utf-8")
        self.wait_text("#source-rows tr[data-source='filesystem:notes'] td.embedding", "being embedded now")
        self.save("sources-embedding")

    def agent_try(self) -> None:
        page = self.go("/ui/agents/guide")
        page.fill("input[name=topic]", "hybrid search")
        page.locator("main form button[type=submit]").first.click()
        page.wait_for_load_state("load")
        self.save("agent-try")

    def tools(self) -> None:
        self.go("/ui/tools")
        self.save("tools")

    def tool(self) -> None:
        page = self.go("/ui/tools/signal")
        page.fill("#arg-word", "ahoy")
        page.fill("#arg-times", "2")
        page.select_option("#arg-flag", "green")
        page.check("#arg-loud")
        page.locator("#tool-form button[type=submit]").click()
        page.locator("pre#tool-result").wait_for()
        self.save("tool")

    def phone(self) -> None:
        context = self.browser.new_context(viewport=PHONE, storage_state=self.context.storage_state())
        page = context.new_page()
        page.goto(self.url + "/ui/search?q=how+do+I+connect+a+client&mode=keyword")
        page.locator("#results li.hit").first.wait_for()
        self.save("phone", page=page)
        context.close()


# In this order: the login comes first; the conflict edits the note the note picture writes; the embedding
# run comes last (its notes would show in the other pictures). agent-builder takes agent-builder-try too.
ORDER: list[tuple[str, Callable[[Shots], None]]] = [
    ("login", Shots.login), ("search", Shots.search), ("explain", Shots.explain), ("document", Shots.document),
    ("note", Shots.note), ("conflict", Shots.conflict), ("graph", Shots.graph), ("sources", Shots.sources),
    ("agents", Shots.agents), ("agent-editor", Shots.agent_editor), ("agent-builder", Shots.agent_builder),
    ("agent-try", Shots.agent_try), ("tools", Shots.tools), ("tool", Shots.tool), ("phone", Shots.phone),
    ("sources-embedding", Shots.sources_embedding),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=[name for name, _ in ORDER],
                        help="take only these (the pages they need first are still visited)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    executable = chromium()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctx-screenshots-") as tmp:
        root = Path(tmp)
        config = workspace(root)
        env = {**os.environ, "XDG_DATA_HOME": str(root / "xdg-data"), "XDG_CONFIG_HOME": str(root / "xdg-config")}
        subprocess.run([str(BIN / "ctx"), "sync", "--config", str(config), "--progress", "none"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        with served(config, env) as url, sync_playwright() as pw:
            flags = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
            browser = pw.chromium.launch(executable_path=executable, headless=True, args=flags)
            with tempfile.TemporaryDirectory(prefix="ctx-screenshots-discard-") as discard:
                shots = Shots(browser, url, root, args.out)
                for name, take in ORDER:
                    shots.keep = not args.only or name in args.only
                    shots.out = args.out if shots.keep else Path(discard)
                    take(shots)
            browser.close()


if __name__ == "__main__":
    main()
