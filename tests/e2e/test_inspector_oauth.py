"""The official MCP Inspector CLI signs in with OAuth, headless, to a real ``ctx serve --http`` with
``[server.oauth]`` on: it registers (RFC 7591), prints the authorization URL and listens on its
loopback callback; the owner approves on the console's page (plain HTTP here) with ``read`` only, the
browser's last hop (the redirect to the callback) is made by the test, and the Inspector exchanges
the code with PKCE, then lists the tools, or calls ``note_write`` and is refused naming the scope.

Without a TTY the Inspector refuses interactive OAuth unless ``MCP_AUTO_OPEN_ENABLED=true``; with it
set (and no browser to open) it prints "Please navigate to: URL", which is all a headless run needs.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from support.http import free_port, spawn_http, stop_process
from support.inspector import inspector_bin
from support.oauth import approve_over_http, approve_workspaces, child_environment, serve_oauth
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.slow

PROMPT = "Please navigate to: "


def signed_in_run(bin_dir: Path, home: Path, env: dict[str, str], base: str, callback: str,
                  *options: str, expect: int = 0, approve: Callable[[str], Awaitable[str]] | None = None
                  ) -> dict[str, Any]:
    """One ``mcp-inspector --cli`` run against ``base``/mcp that signs in through the owner's approval
    (``approve(url)``; by default read only) with its listener at ``callback``; its printed JSON
    (``expect``: its exit code)."""
    command = [str(bin_dir / "mcp-inspector"), "--cli", "--format", "json", *options, "--callback-url", callback,
               "--server-url", f"{base}/mcp"]
    run_env = {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}", "HOME": str(home), "NO_COLOR": "1",
               "MCP_CATALOG_PATH": str(home / "mcp.json"), "MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": "true",
               "MCP_INSPECTOR_SECRET_STORE": "memory"}
    proc = subprocess.Popen(command, env=run_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    said: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if PROMPT in line:
                lines.put(line.split(PROMPT, 1)[1].strip())
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    try:
        url = lines.get(timeout=90)
        assert url.startswith(f"{base}/authorize?"), "".join(said)

        async def approve_and_return() -> None:
            back = await (approve(url) if approve else approve_over_http(url, base, scopes=()))
            async with httpx2.AsyncClient(timeout=30) as http:
                assert (await http.get(back)).status_code == 200  # the Inspector's callback listener

        anyio.run(approve_and_return)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == expect, "".join(said) + out
    return dict(json.loads(out)) if out.strip() else {"stderr": "".join(said)}


def test_inspector_cli_signs_in_with_oauth_lists_and_is_refused_a_write(tmp_path: Path) -> None:
    bin_dir = inspector_bin()
    env = child_environment(tmp_path)
    server = serve_oauth(tmp_path, env)
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"  # the one it registers (it keeps the client)
    try:
        listed = signed_in_run(bin_dir, tmp_path / "home", env, server.url, callback, "--method", "tools/list")
        assert {"search", "note_write"} <= {tool["name"] for tool in listed["result"]["tools"]}
        called = signed_in_run(bin_dir, tmp_path / "home", env, server.url, callback, "--method", "tools/call",
                               "--tool-name", "note_write", "--tool-args-json",
                               json.dumps({"source": "docs", "path": "i.md", "content": "x"}), expect=5)
        assert called["result"]["isError"] is True  # exit 5: the tool answered isError
        error = json.loads(called["result"]["content"][0]["text"])["error"]
        assert error["code"] == "insufficient_scope" and "'write'" in error["message"]
        assert not (tmp_path / "docs" / "i.md").exists()
    finally:
        stop_process(server.process)


def test_inspector_cli_signed_in_to_one_of_two_workspaces_sees_only_that_one(tmp_path: Path) -> None:
    """``ctx serve --http --workspaces`` with the registry's OAuth: the owner grants ``read:notes``; the
    Inspector's ``workspaces`` lists notes alone, and a search in ``work`` is refused as an unknown one."""
    bin_dir = inspector_bin()
    env = {**child_environment(tmp_path), "CTX_OWNER_TOKEN": "inspector-owner-token-41"}
    entries = ""
    for name, text in (("notes", "Tomatoes need sun."), ("work", "Staging first.")):
        write_files(tmp_path / name / "docs", {f"{name}.md": f"# {name}\n\n{text}\n"})
        config = tmp_path / name / "ctx.toml"
        config.write_text(config_toml(docs_root=(tmp_path / name / "docs").as_posix(), server="sync_on_start = true"),
                          encoding="utf-8")
        entries += f'[workspaces.{name}]\nconfig = "{config.as_posix()}"\n'
    port = free_port()
    registry = tmp_path / "workspaces.toml"
    registry.write_text(f'{entries}\n[server]\npublic_url = "http://127.0.0.1:{port}"\nauth_token = '
                        '"${CTX_OWNER_TOKEN}"\n\n[server.oauth]\nenabled = true\n', encoding="utf-8")
    server = spawn_http(["--workspaces", str(registry)], env, port)
    base = f"http://127.0.0.1:{port}"
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"

    def owner(url: str) -> Awaitable[str]:
        return approve_workspaces(url, base, ["read:notes"], env["CTX_OWNER_TOKEN"])

    try:
        listed = signed_in_run(bin_dir, tmp_path / "home", env, base, callback, "--method", "tools/call",
                               "--tool-name", "workspaces", approve=owner)
        assert [w["name"] for w in listed["result"]["structuredContent"]["workspaces"]] == ["notes"]
        refused = signed_in_run(bin_dir, tmp_path / "home", env, base, callback, "--method", "tools/call",
                                "--tool-name", "search", "--tool-args-json",
                                json.dumps({"query": "staging", "workspace": "work"}), expect=5, approve=owner)
        error = json.loads(refused["result"]["content"][0]["text"])["error"]
        assert error["message"].startswith("unknown workspace 'work'") and error["message"].endswith(": notes")
    finally:
        stop_process(server)
