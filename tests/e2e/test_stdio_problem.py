"""A stdio server that cannot serve explains itself to the client (issue 41): rather than exit before
the handshake (which Claude Code shows as "Failed to connect"), it completes ``initialize`` with
instructions naming the problem and answers every tool call with it; stderr carries the same line
and the process exits 1 once the client closes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from context_harness.server.stdio import PROBLEM_TOOLS

pytestmark = pytest.mark.slow

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


def broken_config(tmp_path: Path) -> Path:
    path = tmp_path / "ctx.toml"
    path.write_text('[db]\npath = "data/ctx.sqlite"\n\n[retrieval]\nfinal_limt = 3\n', encoding="utf-8")
    return path


def test_a_broken_config_is_answered_over_the_wire_then_exits_1(tmp_path: Path, child_env: dict[str, str]) -> None:
    config = broken_config(tmp_path)
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search",
                                                                            "arguments": {"query": "x"}}}]
    done = subprocess.run([sys.executable, "-m", "context_harness", "--config", str(config)], env=child_env,
                          input="".join(json.dumps(m) + "\n" for m in lines), capture_output=True, text=True,
                          timeout=60)
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3]
    assert "retrieval.final_limt: unknown key" in answers[1]["result"]["instructions"]
    assert [t["name"] for t in answers[2]["result"]["tools"]] == list(PROBLEM_TOOLS)
    call = answers[3]["result"]
    error = json.loads(call["content"][0]["text"])["error"]
    assert call["isError"] is True and error["code"] == "config_error" and "final_limt" in error["message"]
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"error: {config}: retrieval.final_limt: unknown key; did you mean " \
        "final_limit? (the config reference: `ctx help config`)"


@pytest.mark.anyio
async def test_a_real_client_connects_and_reads_the_problem(tmp_path: Path, child_env: dict[str, str]) -> None:
    missing = tmp_path / "nowhere" / "ctx.toml"
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(missing)],
                                   env=child_env, cwd=str(tmp_path))
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert f"config file {missing} does not exist" in (client.instructions or "")
            found = await client.call_tool("search", {"query": "anything"})
    assert found.is_error and f"config file {missing} does not exist" in found.content[0].text


def test_at_a_terminal_it_says_so_and_exits_at_once(tmp_path: Path, child_env: dict[str, str]) -> None:
    import os
    import pty

    config = broken_config(tmp_path)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "context_harness", "serve", "--config", str(config)],
                              env=child_env, stdin=follower, capture_output=True, text=True, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {config}: retrieval.final_limt: unknown key; did you mean "
                                        "final_limit? (the config reference: `ctx help config`)"]
