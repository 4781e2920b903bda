"""The browser tests' workspace and helpers: the notes, agents and skills served, ``serve_console``
(the real ``ctx serve --http`` in a subprocess), the Chromium to drive, and a page's login.

Playwright never downloads a browser here: it launches the system one (``executable_path``), found
as ``CTX_TEST_CHROMIUM``, then ``chromium`` on PATH, then Debian's ``/usr/bin/chromium``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.http import free_port, spawn_http
from support.paths import BIN, REPO
from support.workspace import write_files

TOKEN = "browser-token-5c1d7e"
WAIT_MS = 15_000  # the longest any one browser step may take
SCREENSHOTS = REPO / "docs" / "img"

SECTIONS = {  # the manual's sections, each a chunk of its own; the berths make it longer than one page
    "Mooring": "Boats tie up at the east quay and the harbour master assigns berths.",
    "Tides": "The tide tables are posted at dawn, and a spring tide floods the slipway.",
    **{f"Berth {n}": f"Berth {n} takes boats up to {n + 8} metres long." for n in range(1, 13)},
    "Lighthouse": "The lighthouse keeper logs every quokkaflare sighting in the red ledger.",
}


def manual() -> str:
    """A Markdown manual of about 12,000 characters (more than the console shows at once) whose
    sections each fill a chunk; only "Lighthouse" mentions a quokkaflare."""
    parts = ["# Harbour manual\n\nHow the harbour runs, section by section.\n"]
    for heading, sentence in SECTIONS.items():
        filler = " ".join(f"Rule {n} of the {heading.lower()} section keeps the harbour orderly." for n in range(10))
        parts.append(f"## {heading}\n\n{sentence} {filler}\n")
    return "\n".join(parts)


# The notes: a manual with sections (a hit opens at its own), tagged notes, and an HTML/JS payload.
NOTES = {
    "manual.md": manual(),
    "tantivy.md": "---\ntags: [search, rust]\n---\n# Tantivy notes\n\nTantivy is a full-text search engine "
    "library written in Rust. It ranks keyword matches with BM25.\n",
    "lua.md": "---\ntags: [lua, security]\n---\n# Lua sandbox\n\nScripts run in a sandboxed Lua runtime with a "
    "memory cap, so a runaway search loop stops.\n",
    "payload.md": "---\ntitle: '<script>alert(\"title\")</script> xsspayload'\n---\n"
    "# <img src=x onerror=\"alert('heading')\">\n\n"
    "xsspayload body <img src=x onerror=\"alert('body')\"> <script>alert('script')</script> "
    "[a link](javascript:alert('link')) <a href=\"javascript:alert('anchor')\">anchor</a>\n",
}
SKILLS = {
    "skills/checklist/SKILL.md": "---\nname: checklist\ndescription: A review checklist.\n---\n"
    "Run the checklist: tests pass, docs updated.\n",
}
AGENTS = {
    "agents/harbourmaster.md": "---\nname: harbourmaster\ndescription: Answers questions about the harbour.\n"
    "tools: search, get\n---\n\nYou answer questions about the harbour from its manual.\n",
}

# An agent in a TOML table: listed, never editable in the console.
TOML_AGENT = '[agents.tide-reader]\ndescription = "Reads the tide tables."\nsystem_prompt = "You read tide tables."\n'


def chromium_path() -> str | None:
    """The Chromium to drive: ``CTX_TEST_CHROMIUM``, ``chromium`` on PATH, or Debian's ``/usr/bin/chromium``."""
    override = os.environ.get("CTX_TEST_CHROMIUM")
    if override:
        return override
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def config_text(docs: Path, server: str = "", extra: str = "", embedding: str = "local") -> str:
    return (f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "{embedding}"\n\n'
            f'[server]\nsync_on_start = false\nauth_token = "{TOKEN}"\n{server}\n\n'
            f'[connectors.filesystem.docs]\nroot = "{docs.as_posix()}"\n\n{TOML_AGENT}\n{extra}')


def child_environment(root: Path) -> dict[str, str]:
    kept = ("PATH", "HOME", "LANG", "SYSTEMROOT", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env.update(XDG_DATA_HOME=str(root / "xdg-data"), XDG_CONFIG_HOME=str(root / "xdg-config"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), HF_HUB_OFFLINE="1")
    return env


@dataclass
class Console:
    """A served workspace: its base ``url``, folders, config file and process."""

    url: str
    root: Path
    config: Path
    process: subprocess.Popen

    @property
    def docs(self) -> Path:
        return self.root / "docs"


def serve_console(root: Path, server: str = "", extra: str = "", embedding: str = "local",
                  files: dict[str, str] | None = None) -> Console:
    """Write the workspace (and ``files``) in ``root``, index it with ``ctx sync`` (embedded with the
    bundled model unless ``embedding`` says otherwise), then start ``ctx serve --http``."""
    write_files(root / "docs", NOTES)
    write_files(root, {**SKILLS, **AGENTS, **(files or {})})
    config = root / "ctx.toml"
    config.write_text(config_text(root / "docs", server, extra, embedding), encoding="utf-8")
    env = child_environment(root)
    subprocess.run([str(BIN / "ctx"), "sync", "--config", str(config), "--progress", "none"], env=env,
                   check=True, timeout=60, stdout=subprocess.DEVNULL)
    port = free_port()
    process = spawn_http(["--config", str(config)], env, port, timeout=15, stderr=subprocess.DEVNULL)
    return Console(f"http://127.0.0.1:{port}", root, config, process)


@dataclass
class Events:
    """What a page showed that it should not have: dialogs opened and console errors logged."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda message: self.errors.append(f"{message.text} at {message.location['url']}")
                if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))


def open_page(browser: Any, events: Events, **options: Any) -> Any:
    """A new page in a fresh context (no cookies), its waits bounded, its events recorded."""
    context = browser.new_context(viewport={"width": 1100, "height": 760}, **options)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    events.watch(page)
    return page


def log_in(page: Any, url: str, token: str = TOKEN) -> None:
    """Fill the login form with ``token`` and submit it."""
    page.goto(f"{url}/ui/login")
    page.fill("#token", token)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
