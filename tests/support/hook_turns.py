"""What the hook tests with a real client (Claude Code, Codex, Gemini CLI) share: a stand-in for the
client's model API on 127.0.0.1, and a project beside a synced notes folder that is the hooks' inbox,
with the hooks installed for the client the way a user installs them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIG = ('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
          '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n'
          '[hooks]\ninbox = "filesystem:notes"\n')


@contextmanager
def stand_in(handler: type[BaseHTTPRequestHandler], path: str = "") -> Iterator[str]:
    """``handler`` serving on a free loopback port; yields its address (with ``path``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Project:
    notes: Path  # the hooks' inbox, holding one pinned note
    home: Path  # the client's HOME
    project: Path  # the git project the client works in ("widgetry")
    ctx: list[str]  # this install's CLI with the workspace's config


def project(tmp_path: Path, client_folder: str = "") -> Project:
    """The notes, a HOME (with ``client_folder`` in it) and the project, the workspace synced."""
    notes, home, work = tmp_path / "notes", tmp_path / "home", tmp_path / "widgetry"
    for folder in (notes, home / client_folder, work / ".git"):
        folder.mkdir(parents=True, exist_ok=True)
    (notes / "conventions.md").write_text("---\ntags: [pinned]\n---\n# House conventions\n\nAlways lint.\n",
                                          encoding="utf-8")
    config = tmp_path / "ctx.toml"
    config.write_text(CONFIG, encoding="utf-8")
    ctx = [sys.executable, "-m", "context_harness", "--config", str(config)]
    assert subprocess.run([*ctx, "sync"], capture_output=True, timeout=120).returncode == 0
    return Project(notes, home, work, ctx)


def install_hooks(at: Project, client: str, home_variable: str) -> None:
    """``ctx hook install CLIENT`` from the project, the client's home variable unset (HOME decides)."""
    env = {**os.environ, "HOME": str(at.home)}
    env.pop(home_variable, None)
    done = subprocess.run([*at.ctx, "hook", "install", client], capture_output=True, text=True, timeout=120,
                          cwd=at.project, env=env)
    assert done.returncode == 0, done.stderr
