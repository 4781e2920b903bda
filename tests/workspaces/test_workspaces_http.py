"""``ctx serve --http --workspaces FILE`` (issue 52): each workspace's ``[server] auth_token`` opens that
workspace, over REST and MCP alike; no token, or one that opens nothing, is refused; a workspace
without a token is served on loopback only."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from support.http import free_port, spawn_http, stop_process
from support.paths import BIN
from support.workspace import config_toml, write_files

NOTES_TOKEN, WORK_TOKEN = "notes-token-0123456789", "work-token-0123456789"


def workspace(root: Path, docs: dict[str, str], token: str | None) -> Path:
    write_files(root / "docs", docs)
    server = f'auth_token = "{token}"' if token else "sync_on_start = true"
    path = root / "ctx.toml"
    path.write_text(config_toml(docs_root=str(root / "docs"), server=server), encoding="utf-8")
    return path


def registry(tmp_path: Path, work_token: str | None = WORK_TOKEN) -> Path:
    notes = workspace(tmp_path / "notes", {"garden.md": "# Garden notes\n\nTomatoes need sun.\n"}, NOTES_TOKEN)
    work = workspace(tmp_path / "work", {"deploy.md": "# Deploy runbook\n\nStaging first, garden later.\n"},
                     work_token)
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.notes]\nconfig = "{notes}"\n[workspaces.work]\nconfig = "{work}"\n', encoding="utf-8")
    return file


@pytest.fixture
def served(tmp_path: Path, child_env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = spawn_http(["--workspaces", str(registry(tmp_path))], child_env, port)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def until_found(url: str, token: str) -> list[dict]:
    for _ in range(300):
        hits = httpx2.post(f"{url}/tools/search", json={"query": "garden"}, headers=bearer(token), timeout=30).json()
        if hits.get("results"):
            return list(hits["results"])
        time.sleep(0.1)
    raise AssertionError("nothing indexed")


def test_each_token_opens_its_own_workspace_over_rest(served: str) -> None:
    assert httpx2.get(f"{served}/health").status_code == 200
    refused = httpx2.post(f"{served}/tools/search", json={"query": "garden"})
    assert refused.status_code == 401 and "every workspace needs" in refused.json()["error"]["message"]
    wrong = httpx2.post(f"{served}/tools/search", json={"query": "garden"}, headers=bearer("nope"))
    assert wrong.status_code == 401 and "opens no workspace" in wrong.json()["error"]["message"]
    listed = httpx2.post(f"{served}/tools/workspaces", json={}, headers=bearer(NOTES_TOKEN)).json()
    assert [w["name"] for w in listed["workspaces"]] == ["notes"]
    assert {hit["workspace"] for hit in until_found(served, NOTES_TOKEN)} == {"notes"}
    assert {hit["workspace"] for hit in until_found(served, WORK_TOKEN)} == {"work"}
    other = httpx2.post(f"{served}/tools/search", json={"query": "garden", "workspace": "work"},
                        headers=bearer(NOTES_TOKEN))
    assert other.status_code == 404 and other.json()["error"]["message"].endswith("the workspaces are: notes")


@pytest.mark.anyio
async def test_each_token_opens_its_own_workspace_over_mcp(served: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    until_found(served, WORK_TOKEN)
    async with httpx2.AsyncClient(headers=bearer(WORK_TOKEN), timeout=30) as http:
        async with Client(streamable_http_client(f"{served}/mcp", http_client=http)) as client:
            listed = (await client.call_tool("workspaces", {})).structured_content
            assert [w["name"] for w in listed["workspaces"]] == ["work"]
            found = (await client.call_tool("search", {"query": "garden"})).structured_content["results"]
            assert {hit["workspace"] for hit in found} == {"work"}
            resources = (await client.list_resources()).resources
            assert {str(r.uri).removeprefix("ctx://documents/").partition(":")[0] for r in resources
                    if str(r.uri).startswith("ctx://documents/")} == {"work"}


def test_a_workspace_without_a_token_is_served_on_loopback_only(tmp_path: Path, child_env: dict[str, str]) -> None:
    file = registry(tmp_path, work_token=None)
    refused = subprocess.run([str(BIN / "ctx"), "--workspaces", str(file), "serve", "--http", "--bind",
                              f"0.0.0.0:{free_port()}"], env=child_env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "refusing to serve on 0.0.0.0 without a token" in refused.stderr


def test_the_console_switches_between_the_workspaces(tmp_path: Path, child_env: dict[str, str]) -> None:
    notes = workspace(tmp_path / "notes", {"garden.md": "# Garden notes\n\nTomatoes need sun.\n"}, None)
    work = workspace(tmp_path / "work", {"deploy.md": "# Deploy runbook\n\nStaging first.\n"}, None)
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.notes]\nconfig = "{notes}"\n[workspaces.work]\nconfig = "{work}"\n', encoding="utf-8")
    port = free_port()
    proc = spawn_http(["--workspaces", str(file)], child_env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx2.Client(base_url=url, timeout=30) as browser:
            first = browser.get("/ui/search")
            assert first.status_code == 200 and 'aria-label="Workspaces"' in first.text
            assert '<a href="/ui/switch?to=notes" aria-current="true">notes</a>' in first.text
            switched = browser.get("/ui/switch?to=work")
            assert switched.status_code == 303 and switched.headers["location"] == "/ui/search"
            page = browser.get("/ui/search")
            assert '<a href="/ui/switch?to=work" aria-current="true">work</a>' in page.text
            assert page.headers["content-security-policy"].startswith("default-src 'none'")
            assert browser.get("/ui/switch?to=nope").status_code == 404
            assert browser.post("/tools/workspaces", json={}).json()["workspaces"][1]["name"] == "work"
    finally:
        stop_process(proc)
