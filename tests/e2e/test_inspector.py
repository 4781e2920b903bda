"""The official MCP Inspector CLI (on the official TypeScript SDK) against the real server, over stdio
(``ctx --config … serve``) and Streamable HTTP (``ctx serve --http``): every tool including its error
cases, prompts, resources and templates, and the ``--strict`` schema portability check.

The Inspector (pinned in tests/inspector/install.sh, with its own Node 22) is installed from npm; the
suite skips only when the npm registry cannot be reached. Completion is not covered: the Inspector's
CLI has no ``completion/complete`` method (it answers "Unsupported method: prompts/complete"); the
capability it reads at ``initialize`` is checked instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.inspector import Answer, Inspector, inspector_bin, served, synced_environment
from support.workspace import write_hostile_workspace

pytestmark = pytest.mark.slow

UNKNOWN_ID = "0000000000000000"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A synced workspace with every kind of tool, prompt and resource; and the servers' environment."""
    root = tmp_path_factory.mktemp("inspected")
    cfg = write_hostile_workspace(root, writable=True)
    return cfg, synced_environment(cfg, root)


@pytest.fixture(scope="module")
def inspector(workspace: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    return Inspector(inspector_bin(), tmp_path_factory.mktemp("inspector-home"), workspace[1])


@pytest.fixture(scope="module", params=["stdio", "http"])
def target(request: pytest.FixtureRequest, workspace: tuple[Path, dict[str, str]]) -> Iterator[list[str]]:
    """How the Inspector reaches the server: a command to spawn, or the URL of ``ctx serve --http``."""
    yield from served(request.param, *workspace)


def ok(answer: Answer) -> dict:
    assert answer.returncode == 0, answer
    assert answer.result is not None and not answer.result.get("isError"), answer
    return answer.result


def test_tools_list_is_portable_under_strict(inspector: Inspector, target: list[str]) -> None:
    answer = inspector.call(target, "--method", "tools/list", "--strict")
    tools = {tool["name"]: tool for tool in ok(answer)["tools"]}
    assert {"search", "get", "sources", "agent_list", "agent_get", "agent_inject", "echo", "note_write",
            "note_edit", "note_move", "note_delete"} <= tools.keys()
    assert answer.findings == [], answer.findings  # 0 errors, 0 warnings
    assert "Warning" not in answer.stderr and "Schema portability" not in answer.stderr


def test_search_get_sources(inspector: Inspector, target: list[str]) -> None:
    found = ok(inspector.tool(target, "search", {"query": "tantivy rust", "limit": 3}))
    hit = found["structuredContent"]["results"][0]
    assert hit["title"] == "Tantivy notes"
    doc = ok(inspector.tool(target, "get", {"id": hit["id"]}))
    assert doc["structuredContent"]["id"] == hit["id"] and "Rust" in doc["structuredContent"]["body"]
    window = ok(inspector.tool(target, "get", {"id": hit["id"], "chunk": hit["chunk"], "max_chars": 100}))
    assert len(window["structuredContent"]["body"]) <= 100
    sources = ok(inspector.tool(target, "sources", {}))["structuredContent"]["sources"]
    assert sources[0]["name"] == "filesystem:docs" and sources[0]["document_count"] > 0


def test_recent_and_related_validate_against_their_output_schemas(inspector: Inspector, target: list[str]) -> None:
    """The Inspector (the TypeScript SDK's ajv) checks each result against the tool's outputSchema; `related`'s
    items are one shared `$defs` entry, so its lists are filled here (a note with a link and a dead wikilink)."""
    written = ok(inspector.tool(target, "note_write", {
        "source": "docs", "path": "inspector/linked.md", "overwrite": True,
        "content": "See [Tantivy](../tantivy.md) and [[No such page]].\n"}))["structuredContent"]
    changes = ok(inspector.tool(target, "recent", {"limit": 3}))["structuredContent"]["changes"]
    assert written["id"] in {change["id"] for change in changes}
    related = ok(inspector.tool(target, "related", {"id": written["id"]}))["structuredContent"]
    assert [item["title"] for item in related["links_to"]] == ["Tantivy notes"]  # an item of the shared shape
    assert related["unresolved"] == [{"kind": "wiki", "target": "No such page"}]


def test_get_of_an_unknown_id_shows_the_servers_own_message(inspector: Inspector, target: list[str]) -> None:
    answer = inspector.tool(target, "get", {"id": UNKNOWN_ID})
    assert answer.returncode == 5  # the Inspector's exit code for a tool's isError result
    assert answer.tool_error == {"code": "not_found",
                                 "message": f"no document with id '{UNKNOWN_ID}'; use an id returned by search"}
    assert "must have required property" not in answer.stderr + str(answer.result)


@pytest.mark.parametrize(("tool", "arguments", "code", "fragment"), [
    ("search", {"query": ""}, "bad_request", "query"),
    ("search", {"query": "x", "mode": "fuzzy"}, "bad_request", "mode"),
    ("search", {"query": "x", "mode": "semantic"}, "embeddings_disabled", "embedding"),
    ("get", {}, "bad_request", "id"),
    ("get", {"id": "x", "chunk": 1, "offset": 2}, "bad_request", "offset"),
    ("sources", {"verbose": True}, "bad_request", "verbose"),
    ("agent_get", {"name": "nobody"}, "not_found", "nobody"),
    ("agent_inject", {"name": "reviewer"}, "bad_request", "language"),
    ("echo", {"text": "x", "repeat": 0}, "tool_error", "repeat"),
])
def test_tool_errors_reach_the_client(inspector: Inspector, target: list[str], tool: str, arguments: dict,
                                      code: str, fragment: str) -> None:
    error = inspector.tool(target, tool, arguments).tool_error
    assert error["code"] == code, error
    assert fragment in error["message"].lower(), error


def test_agent_and_lua_tools(inspector: Inspector, target: list[str]) -> None:
    listed = ok(inspector.tool(target, "agent_list", {}))["structuredContent"]["agents"]
    assert {a["name"] for a in listed} == {"debugger", "responder", "reviewer"}
    agent = ok(inspector.tool(target, "agent_get", {"name": "reviewer"}))["structuredContent"]
    assert agent["name"] == "reviewer"
    injected = ok(inspector.tool(target, "agent_inject", {"name": "reviewer", "arguments": {"language": "go"}}))
    assert "You review go code." in injected["content"][0]["text"]
    echoed = ok(inspector.tool(target, "echo", {"text": "hi", "repeat": 2}))
    assert echoed["structuredContent"] == {"result": {"echo": "> hi hi", "length": 5}}


def test_prompts(inspector: Inspector, target: list[str]) -> None:
    prompts = {p["name"]: p for p in ok(inspector.call(target, "--method", "prompts/list"))["prompts"]}
    assert {"debugger", "responder", "reviewer"} <= prompts.keys()
    assert prompts["reviewer"]["arguments"][0] == {"name": "language", "description": "Language", "required": True}
    got = ok(inspector.call(target, "--method", "prompts/get", "--prompt-name", "reviewer",
                            "--prompt-args", "language=lua"))
    assert got["messages"][0]["content"]["text"].startswith('<instructions agent="reviewer">\nYou review lua code.')
    missing = inspector.call(target, "--method", "prompts/get", "--prompt-name", "reviewer")
    assert missing.returncode != 0 and "missing required argument(s): language" in missing.stderr


def test_resources_and_templates(inspector: Inspector, target: list[str]) -> None:
    resources = {r["uri"]: r for r in ok(inspector.call(target, "--method", "resources/list"))["resources"]}
    assert {"skill://checklist", "agent://reviewer"} <= resources.keys()
    documents = [uri for uri in resources if uri.startswith("ctx://documents/")]
    assert documents
    read = ok(inspector.call(target, "--method", "resources/read", "--uri", documents[0]))
    assert read["contents"][0]["mimeType"] == "text/markdown" and read["contents"][0]["text"].startswith("# ")
    skill = ok(inspector.call(target, "--method", "resources/read", "--uri", "skill://checklist"))
    assert "Check the tests." in skill["contents"][0]["text"]
    templates = ok(inspector.call(target, "--method", "resources/templates/list"))["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["ctx://documents/{id}"]
    unknown = inspector.call(target, "--method", "resources/read", "--uri", f"ctx://documents/{UNKNOWN_ID}")
    assert unknown.returncode != 0 and f"no document with id '{UNKNOWN_ID}'" in unknown.stderr


def test_initialize_advertises_completion(inspector: Inspector, target: list[str]) -> None:
    started = ok(inspector.call(target, "--method", "initialize"))
    assert started["serverInfo"]["name"] == "context-harness"
    assert "completions" in started["capabilities"] and "prompts" in started["capabilities"]
