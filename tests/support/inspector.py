"""The official MCP Inspector CLI (on the official TypeScript SDK) as a test client.

``inspector_bin()`` installs it with tests/inspector/install.sh (pinned, with its own Node 22) and
returns the folder holding ``mcp-inspector``; it skips the calling test only when the npm registry
cannot be reached. ``Inspector.call(target, *options)`` runs one ``--cli --format json`` call against
a server command (stdio) or URL (Streamable HTTP) and returns what it printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.http import free_port, spawn_http, stop_process
from support.paths import BIN, REPO

INSTALL = REPO / "tests" / "inspector" / "install.sh"


def inspector_bin() -> Path:
    """The ``node_modules/.bin`` folder with ``mcp-inspector`` and ``node``; skips when npm is unreachable."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot install @modelcontextprotocol/inspector (needs npm + network)")
    result = subprocess.run(["sh", str(INSTALL)], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
        if ping.returncode != 0:
            pytest.skip(f"the npm registry is unreachable (npm ping: {ping.stderr.strip()[-300:]}); "
                        "cannot install @modelcontextprotocol/inspector")
        raise AssertionError(f"tests/inspector/install.sh failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


@dataclass
class Answer:
    """One Inspector run: its exit code, the ``result`` it printed (None when it printed an error
    envelope instead), ``schemaFindings`` under ``--strict``, and its stderr."""

    returncode: int
    result: Any
    findings: list[dict[str, Any]]
    stderr: str

    @property
    def tool_error(self) -> dict[str, Any]:
        """The JSON error in an ``isError`` tool result's text block, as the Inspector shows it."""
        assert self.result is not None and self.result.get("isError") is True, self
        assert "structuredContent" not in self.result, self.result
        error: dict[str, Any] = json.loads(self.result["content"][0]["text"])["error"]
        return error


class Inspector:
    """Runs ``mcp-inspector --cli`` from ``bin_dir`` with its catalog and settings kept in ``home``."""

    def __init__(self, bin_dir: Path, home: Path, env: dict[str, str]) -> None:
        self.bin_dir = bin_dir
        self.env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "NO_COLOR": "1",
                    "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"),
                    "MCP_CLIENT_CONFIG_PATH": str(home / "client.json")}

    def call(self, target: list[str], *options: str, timeout: float = 90) -> Answer:
        """``mcp-inspector --cli --format json OPTIONS -- TARGET`` (``--server-url URL`` for HTTP): ``--``
        keeps the Inspector from taking the server's own options (its ``--config`` would shadow ``ctx
        --config``), and variadic options such as ``--prompt-args`` from eating the target."""
        command = [str(self.bin_dir / "mcp-inspector"), "--cli", "--format", "json", *options]
        command += ["--server-url", target[0]] if target[0].startswith("http") else ["--", *target]
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)
        printed = json.loads(done.stdout) if done.stdout.strip() else {}
        return Answer(done.returncode, printed.get("result"), printed.get("schemaFindings") or [], done.stderr)

    def tool(self, target: list[str], name: str, arguments: dict[str, Any]) -> Answer:
        """``tools/call`` with arguments passed verbatim as JSON."""
        return self.call(target, "--method", "tools/call", "--tool-name", name,
                         "--tool-args-json", json.dumps(arguments))


__all__ = ["Answer", "Inspector", "inspector_bin"]


def synced_environment(cfg: Path, root: Path) -> dict[str, str]:
    """The environment the servers under test get (their data, config and cache folders in ``root``),
    once ``cfg``'s workspace is synced in it."""
    kept = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env.update(XDG_DATA_HOME=str(root / "xdg-data"), XDG_CONFIG_HOME=str(root / "xdg-config"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), HF_HUB_OFFLINE="1")
    synced = subprocess.run([str(BIN / "ctx"), "--config", str(cfg), "sync"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert synced.returncode == 0, synced.stderr
    return env


def served(transport: str, cfg: Path, env: dict[str, str]) -> Iterator[list[str]]:
    """How the Inspector reaches the server: a command to spawn ("stdio"), or the URL of a ``ctx serve
    --http`` started here and stopped when the generator ends ("http")."""
    if transport == "stdio":
        yield [str(BIN / "ctx"), "--config", str(cfg), "serve"]
        return
    port = free_port()
    proc = spawn_http(["--config", str(cfg)], env, port, stderr=subprocess.DEVNULL)
    yield [f"http://127.0.0.1:{port}/mcp"]
    stop_process(proc)
