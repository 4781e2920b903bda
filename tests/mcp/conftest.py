"""Fixtures for the MCP and HTTP adapter tests: a real Harness over a temp folder of Markdown files."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.config import Config
from context_harness.harness import Harness

DOCS = {
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust. "
    "It ranks keyword matches with BM25 and supports stemming.\n",
    "lua/sandbox.md": "---\ntags: [lua, security]\n---\n# Lua sandbox\n\nScripts run in a sandboxed Lua runtime "
    "with instruction hooks and a memory cap, so a runaway loop stops.\n",
    "claude.md": "# Connecting Claude Desktop\n\nAdd the server to claude_desktop_config.json with the uvx command "
    "and restart Claude Desktop.\n",
    "notes.txt": "Plain text notes about embeddings and semantic search with MiniLM vectors.\n",
}


def write_workspace(root: Path, server: str = "sync_on_start = false", embedding: str = "disabled") -> Path:
    """Write the docs and a ctx.toml into ``root``; return the config path."""
    docs = root / "docs"
    for name, text in DOCS.items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    cfg = root / "ctx.toml"
    cfg.write_text(
        f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "{embedding}"\n\n'
        f"[server]\n{server}\n\n[connectors.filesystem.docs]\nroot = \"docs\"\n",
        encoding="utf-8",
    )
    return cfg



@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_workspace(tmp_path)


@pytest.fixture
def config(config_path: Path) -> Config:
    return config_mod.load(config_path)


@pytest.fixture
async def harness(config: Config) -> AsyncIterator[Harness]:
    async with Harness.open(config) as h:
        await h.sync()
        yield h


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadedServer:
    """The real HTTP app under uvicorn on 127.0.0.1:<ephemeral>, in a thread with its own event loop."""

    def __init__(self, config: Config, agent: str | None = None) -> None:
        self.config = config
        self.agent = agent
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import uvicorn

        from context_harness.server.http import build_app

        async def main() -> None:
            async with Harness.open(self.config) as harness:
                await harness.sync()
                app = build_app(harness, self.agent)
                self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                            log_level="warning", lifespan="on"))
                await self.server.serve()

        try:
            anyio.run(main)
        except BaseException as exc:  # surfaced by start()
            self.error = exc

    def start(self) -> "ThreadedServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            if self.server is not None and self.server.started:
                return self
            time.sleep(0.02)
        raise TimeoutError("the HTTP server did not start")

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self.thread.join(timeout=15)


@pytest.fixture
def http_server(config: Config) -> Iterator[ThreadedServer]:
    server = ThreadedServer(config).start()
    yield server
    server.stop()


@pytest.fixture
def make_workspace():
    """``make_workspace(root, server=..., embedding=...)`` -> config path (see ``write_workspace``)."""
    return write_workspace


@pytest.fixture
def start_server() -> Iterator:
    """``start_server(config)`` -> a started ``ThreadedServer``; stopped at teardown."""
    started: list[ThreadedServer] = []

    def start(config: Config, agent: str | None = None) -> ThreadedServer:
        server = ThreadedServer(config, agent).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
