"""Fixtures for subprocess tests: a temp folder of Markdown files and the real entry points."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

DOCS = {
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust.\n",
    "lua/sandbox.md": "# Lua sandbox\n\nScripts run in a sandboxed Lua runtime with instruction hooks.\n",
    "claude.md": "# Connecting Claude Desktop\n\nAdd the server to claude_desktop_config.json and restart.\n",
}



@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name, text in DOCS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def config_file(tmp_path: Path, docs: Path) -> Path:
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
                   f'[connectors.filesystem.docs]\nroot = "{docs}"\n', encoding="utf-8")
    return cfg


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """Environment for spawned servers: isolated XDG dirs, nothing else from the test process."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "SYSTEMROOT", "TMPDIR")}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
               XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), HF_HUB_OFFLINE="1")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_http(args: list[str], env: dict[str, str], port: int, timeout: float = 30) -> subprocess.Popen:
    """Start ``ctx serve --http`` and wait for /health."""
    proc = subprocess.Popen([str(BIN / "ctx"), *args, "serve", "--http", "--bind", f"127.0.0.1:{port}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ctx serve --http exited: {proc.stderr.read().decode(errors='replace')}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError("ctx serve --http did not answer /health")


@pytest.fixture
def http_process(config_file: Path, child_env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = spawn_http(["--config", str(config_file)], child_env, port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stderr.close()
