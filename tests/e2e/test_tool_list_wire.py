"""``tools/list`` on the real stdio wire: its bytes as sent, and the title said once per protocol version.

tests/server/test_tool_list.py bounds the list as the SDK serialises it in memory; this reads the line the
spawned ``context-harness`` writes. A client of protocol 2025-06-18 or later reads a tool's ``title``; an
older one only knows ``annotations.title``, so only it is sent the title there too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.workspace import write_knowledge_base

DEFAULT_LIST_BYTES = 12_000


def tools_list_line(config: Path, env: dict[str, str], version: str) -> bytes:
    """The raw stdout line answering ``tools/list`` after an ``initialize`` for ``version``."""
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "wire", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run([sys.executable, "-m", "context_harness", "--config", str(config)], input=stdin.encode(),
                          capture_output=True, env=env, timeout=60)
    lines = [line for line in done.stdout.splitlines() if json.loads(line).get("id") == 1]
    assert len(lines) == 1, done.stderr.decode()[-2000:]
    return lines[0]


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_tools_list_on_the_wire(tmp_path: Path, child_env: dict[str, str], version: str) -> None:
    line = tools_list_line(write_knowledge_base(tmp_path), child_env, version)
    result: dict[str, Any] = json.loads(line)["result"]
    sent = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    assert sent <= DEFAULT_LIST_BYTES, f"tools/list is {sent:,} bytes on the wire"
    assert len(line) < sent + 40  # the envelope ({"jsonrpc":"2.0","id":1,"result":...}) is all the rest
    search = next(tool for tool in result["tools"] if tool["name"] == "search")
    assert search["title"] == "Search the knowledge base"
    assert ("title" in search["annotations"]) is (version < "2025-06-18"), search["annotations"]
