"""Fixtures for the tool-registry tests: a real Harness over Markdown files plus Lua tools in ctx.toml,
a local JSON API on 127.0.0.1, and the in-process REST client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from context_harness import config as config_mod
from context_harness.harness import Harness

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "lua"

DOCS = {
    "lua.md": "# Lua sandbox\n\nScripts run in a sandboxed Lua runtime with a memory cap and a wall-clock "
    "timeout, so a runaway loop stops.\n",
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust.\n",
}

# A tool whose behaviour is chosen by its arguments: success, script error, timeout.
MODES_TOOL = """
tool = {
  description = "Modes for tests",
  parameters = {
    { name = "mode", type = "string", required = true, enum = { "ok", "error", "spin", "sleep", "search" } },
    { name = "n", type = "integer", default = 2 },
  },
}
function tool.execute(params, context)
  if params.mode == "error" then error("deliberate failure") end
  if params.mode == "spin" then while true do end end
  if params.mode == "sleep" then sleep(30) end
  if params.mode == "search" then
    local hits = context.search("lua sandbox", { limit = params.n })
    return { count = #hits, first = hits[1] and hits[1].title }
  end
  return { mode = params.mode, n = params.n, config = context.config.label }
end
"""

TOOLS_TOML = """
[tools.script.echo]
path = "{examples}/echo.lua"
prefix = "> "

[tools.script.search_summary]
path = "{examples}/search_summary.lua"
max_chars = 60

[tools.script.modes]
path = "tools/modes.lua"
timeout = 0.5
label = "from-config"
"""


def write_workspace(root: Path, extra: str = "") -> Path:
    for name, text in DOCS.items():
        path = root / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "modes.lua").write_text(MODES_TOOL, encoding="utf-8")
    cfg = root / "ctx.toml"
    cfg.write_text(
        '[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
        '[server]\nsync_on_start = false\n\n[connectors.filesystem.docs]\nroot = "docs"\n'
        + TOOLS_TOML.format(examples=EXAMPLES.as_posix()) + extra,
        encoding="utf-8",
    )
    return cfg



@pytest.fixture
def make_workspace():
    """``make_workspace(root, extra_toml="")`` -> config path (see ``write_workspace``)."""
    return write_workspace


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_workspace(tmp_path)


@pytest.fixture
async def harness(config_path: Path) -> AsyncIterator[Harness]:
    async with Harness.open(config_mod.load(config_path)) as h:
        await h.sync()
        yield h


# -- a local JSON API (for the json_api connector example) ------------------------------------

ARTICLES = [
    {"id": i, "title": f"Article {i}", "body": f"Article {i} explains quokka husbandry, part {i}.",
     "author": "ann", "url": f"https://example.test/a/{i}", "tags": ["news"],
     "updated_at": f"2026-01-{i + 1:02d}T10:00:00Z"}
    for i in range(5)
]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/articles":
            page = int(query.get("page", "1"))
            chunk = ARTICLES[(page - 1) * 2: page * 2]
            nxt = f"http://{self.headers['Host']}/articles?page={page + 1}" if page * 2 < len(ARTICLES) else None
            body = json.dumps({"items": chunk, "next": nxt}).encode()
            status = 200
        elif url.path == "/slow":
            time.sleep(float(query.get("s", "3")))
            body, status = b"{}", 200
        else:
            body, status = b'{"error": "no route"}', 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
