"""ChatGPT's connector shapes seen by the official MCP Inspector CLI (the official TypeScript SDK), over
stdio (``ctx serve``) and Streamable HTTP (``ctx serve --http``): ``search`` then ``fetch`` of each
result, an unknown id, and the schemas under ``--strict``.

The Inspector cannot name its client (it always sends ``clientInfo`` name ``inspector-cli``), so the
workspace sets ``[server] profile = "chatgpt"``; tests/server/test_compat_chatgpt.py covers a client
named ``openai-mcp``. Installed as in test_inspector.py (skips only when npm is unreachable).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.inspector import Answer, Inspector, inspector_bin, served, synced_environment
from support.workspace import write_knowledge_base

pytestmark = pytest.mark.slow

PUBLIC = "https://kb.example.com"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("chatgpt")
    cfg = write_knowledge_base(root, server=f'sync_on_start = false\nprofile = "chatgpt"\npublic_url = "{PUBLIC}"')
    return cfg, synced_environment(cfg, root)


@pytest.fixture(scope="module")
def inspector(workspace: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    return Inspector(inspector_bin(), tmp_path_factory.mktemp("inspector-home"), workspace[1])


@pytest.fixture(scope="module", params=["stdio", "http"])
def target(request: pytest.FixtureRequest, workspace: tuple[Path, dict[str, str]]) -> Iterator[list[str]]:
    yield from served(request.param, *workspace)


def one_json_item(answer: Answer) -> dict:
    """OpenAI's shape of an answer: exactly one text item holding the JSON (also the structured content)."""
    assert answer.returncode == 0, answer
    result = answer.result
    assert result is not None and not result.get("isError"), answer
    [item] = result["content"]
    assert item["type"] == "text"
    payload: dict = json.loads(item["text"])
    assert result["structuredContent"] == payload
    return payload


def test_tools_list_has_openais_search_and_fetch_and_is_portable(inspector: Inspector, target: list[str]) -> None:
    answer = inspector.call(target, "--method", "tools/list", "--strict")
    assert answer.returncode == 0, answer
    tools = {tool["name"]: tool for tool in answer.result["tools"]}
    assert {"search", "fetch", "get", "sources"} <= tools.keys()
    assert list(tools["search"]["inputSchema"]["properties"]) == ["query"]
    assert list(tools["fetch"]["inputSchema"]["properties"]) == ["id"]
    assert answer.findings == [], answer.findings


def test_search_then_fetch_each_result(inspector: Inspector, target: list[str]) -> None:
    found = one_json_item(inspector.tool(target, "search", {"query": "Rust search engine"}))
    assert list(found) == ["results"] and found["results"]
    for hit in found["results"]:
        assert list(hit) == ["id", "title", "url"] and all(isinstance(v, str) for v in hit.values())
        assert hit["url"] == f"{PUBLIC}/ui/doc?id={hit['id']}"
        doc = one_json_item(inspector.tool(target, "fetch", {"id": hit["id"]}))
        assert list(doc) == ["id", "title", "text", "url", "metadata"]
        assert (doc["id"], doc["title"], doc["url"]) == (hit["id"], hit["title"], hit["url"])
        assert doc["text"] and doc["metadata"]["source"] == "filesystem:docs"
    assert "Tantivy notes" in {hit["title"] for hit in found["results"]}


def test_fetch_of_an_unknown_id_is_the_servers_own_error(inspector: Inspector, target: list[str]) -> None:
    answer = inspector.tool(target, "fetch", {"id": "0000000000000000"})
    assert answer.returncode == 5  # the Inspector's exit code for a tool's isError result
    assert answer.tool_error == {"code": "not_found",
                                 "message": "no document with id '0000000000000000'; use an id returned by search"}
