"""Start-up imports nothing the first answer does not need (issue 28: under a second to start).

A child Python runs the real ``context-harness`` entry (``cli.main_server``) over pipes; the test
writes initialize, initialized and tools/list, reads the answer, closes stdin, and the child writes
the names in ``sys.modules`` when it exits. The config keeps the vectors open (the default local
embedder) but gives nothing a reason to load more after the answer: keyword searches by default
(no warm-up), no sync on start, no watchers. ``benchmarks/cold_start.py`` measures the time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.workspace import config_toml, write_files

# Each was on the start-up path once (issue 28) and costs start-up time a first answer does not need.
HEAVY = (
    "mcp.client",  # the SDK's client side: `mcp/__init__.py` re-exports it (server/sdk.py defers that)
    "mcp.server.mcpserver",  # the SDK's high-level server: `mcp/server/__init__.py` re-exports it
    "httpx", "httpx2",  # the SDK client's HTTP stack
    "numpy",  # the vectors' arrays: loaded by the first search or embedding
    "faiss",  # the approximate vector graph of large indexes
    "fastembed", "onnxruntime", "onnx", "tokenizers",  # the embedding model
    "pypdfium2", "docx", "lxml",  # document conversion (sync only)
    "psycopg", "pgvector",  # the PostgreSQL backend
)
# Loaded by every serving start: their presence shows the snapshot is of a real one.
SERVED = ("context_harness.core.harness", "context_harness.server.stdio", "context_harness.store.vectors",
          "mcp.server.runner", "mcp.server.lowlevel.server", "tantivy")

CHILD = """
import json, sys
from context_harness.cli import main_server

out = sys.argv.pop(1)
try:
    main_server()
finally:
    with open(out, "w", encoding="utf-8") as f:
        json.dump(sorted(sys.modules), f)
"""
HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
]


def served_modules(tmp_path: Path) -> tuple[list[str], set[str]]:
    """Serve one handshake from a fresh process: (the tool names listed, the modules it imported)."""
    write_files(tmp_path / "docs", {"note.md": "# Note\n\nA note about releases.\n"})
    config = tmp_path / "ctx.toml"
    config.write_text(config_toml(embedding="local", server="sync_on_start = false\nwatch = false",
                                  extra='\n[retrieval]\ndefault_mode = "keyword"\n'), encoding="utf-8")
    out = tmp_path / "modules.json"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out), "--config", str(config)], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in HANDSHAKE))
        proc.stdin.flush()
        answer: dict = {}
        while answer.get("id") != 1:
            line = proc.stdout.readline()
            assert line, "the server closed stdout before answering tools/list"
            answer = json.loads(line)
        _, stderr = proc.communicate(timeout=60)  # closes stdin: the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr.decode(errors="replace")
    return [tool["name"] for tool in answer["result"]["tools"]], set(json.loads(out.read_text(encoding="utf-8")))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_a_served_stdio_start_imports_nothing_heavy(tmp_path: Path) -> None:
    tools, modules = served_modules(tmp_path)
    assert "search" in tools
    assert [name for name in SERVED if name not in modules] == []
    assert [name for name in HEAVY if loaded(modules, name)] == []


def test_the_deferred_sdk_packages_still_give_their_names() -> None:
    """Code that wants ``mcp.Client`` or ``mcp.server.MCPServer`` after the server module loaded
    still gets them: the first lookup runs the deferred ``__init__``."""
    code = ("import sys, context_harness.server.stdio\n"
            "assert 'mcp.client' not in sys.modules\n"
            "import mcp\n"
            "from mcp.server import MCPServer\n"
            "print(mcp.Client.__name__, MCPServer.__name__, 'mcp.client' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Client", "MCPServer", "True"]
