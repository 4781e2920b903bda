"""The same search and get (whole, a hit's chunk, a page) through MCP (stdio subprocess), REST (HTTP
subprocess) and `ctx search/get --json`."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from support.paths import BIN

pytestmark = pytest.mark.anyio


async def test_search_and_get_payloads_match(config_file, child_env, http_process):
    request = {"query": "search engine sandbox", "limit": 5, "filters": {"source": "filesystem:docs"}}
    # the HTTP server syncs on start; wait until that sync has finished (no `indexing` notice), so every
    # adapter sees the same index and the same payload shape
    with httpx2.Client(base_url=http_process, timeout=30) as http:
        for _ in range(300):
            rest = http.post("/tools/search", json=request)
            if len(rest.json()["results"]) >= 2 and "indexing" not in rest.json():
                break
            time.sleep(0.05)
        rest_payload = rest.json()
        doc_id, chunk = rest_payload["results"][0]["id"], rest_payload["results"][0]["chunk"]
        windows = [{"id": doc_id, "chunk": chunk, "max_chars": 30}, {"id": doc_id, "offset": 12, "max_chars": 25}]
        rest_doc = http.post("/tools/get", json={"id": doc_id}).json()
        rest_windows = [http.post("/tools/get", json=window).json() for window in windows]
        rest_sources = http.get("/tools/sources").json()

    cli = subprocess.run([str(BIN / "ctx"), "search", request["query"], "--limit", "5", "--source",
                          "filesystem:docs", "--json", "--config", str(config_file)],
                         env=child_env, capture_output=True, check=True)
    cli_payload = json.loads(cli.stdout)
    cli_doc = json.loads(subprocess.run([str(BIN / "ctx"), "get", doc_id, "--json", "--config", str(config_file)],
                                        env=child_env, capture_output=True, check=True).stdout)
    cli_windows = [json.loads(subprocess.run(
        [str(BIN / "ctx"), "get", doc_id, *options, "--json", "--config", str(config_file)],
        env=child_env, capture_output=True, check=True).stdout)
        for options in (["--chunk", str(chunk), "--max-chars", "30"], ["--offset", "12", "--max-chars", "25"])]

    params = StdioServerParameters(command=sys.executable, env=child_env,
                                   args=["-m", "context_harness", "--config", str(config_file)])
    async with Client(params) as client:
        mcp_payload = (await client.call_tool("search", request)).structured_content
        mcp_doc = (await client.call_tool("get", {"id": doc_id})).structured_content
        mcp_windows = [(await client.call_tool("get", window)).structured_content for window in windows]
        mcp_sources = (await client.call_tool("sources", {})).structured_content

    assert len(rest_payload["results"]) >= 2
    assert mcp_payload == rest_payload == cli_payload
    assert mcp_doc == rest_doc == cli_doc
    assert mcp_windows == rest_windows == cli_windows
    assert rest_payload["results"][0]["heading"] is not None
    assert all(w["truncated"] and len(w["body"]) <= 30 for w in rest_windows)
    assert rest_windows[1]["range"]["start"] == 12 and rest_doc["body"][12:].startswith(rest_windows[1]["body"])
    assert mcp_sources["sources"][0]["document_count"] == rest_sources["sources"][0]["document_count"]
