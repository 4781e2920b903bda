"""What strict clients need from tools (issue 27, item 7): error results they can show, schemas they can map.

The TypeScript SDK (MCP Inspector, many desktop and IDE hosts) validates any ``structuredContent``
against the tool's ``outputSchema``, error results included; single-type schema dialects (Gemini
function declarations) reject ``type`` arrays and ``null`` in enums. Every kind of tool is covered:
built-ins, agent tools, AgentZoo compat tools, Lua tools.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from context_harness.server.schemas import portable_input, portable_output
from support.results import error_of
from support.workspace import write_hostile_workspace

pytestmark = pytest.mark.anyio

ERROR_CALLS = [
    ("search", {"query": ""}, "bad_request"),
    ("get", {"id": "0000000000000000"}, "not_found"),
    ("get", {}, "bad_request"),
    ("sources", {"verbose": True}, "bad_request"),
    ("agent_list", {"x": 1}, "bad_request"),
    ("agent_get", {"name": "nobody"}, "not_found"),
    ("agent_inject", {}, "bad_request"),
    ("agent_zoo_get_agent", {"agentId": "nobody"}, "AGENT_NOT_FOUND"),
    ("agent_zoo_inject", {}, "INVALID_ARGUMENTS"),
    ("echo", {}, "bad_request"),
    ("echo", {"text": "x", "repeat": 0}, "tool_error"),
    ("note_write", {"source": "docs", "path": "../x.md", "content": "x"}, "bad_request"),
    ("note_edit", {"id": "0000000000000000", "op": "append", "expected_version": "v"}, "not_found"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    cfg = write_hostile_workspace(tmp_path, server='compat = ["agentzoo"]', writable=True)
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()
        async with Client(build_server(harness), mode="legacy") as connected:
            yield connected


def nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of ``schema`` with its path."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from nodes(item, f"{path}[{i}]")
        return
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("properties", "patternProperties", "$defs"):
        for name, sub in (schema.get(key) or {}).items():
            yield from nodes(sub, f"{path}.{key}.{name}")
    for key in ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(schema.get(key), (dict, list)):
            yield from nodes(schema[key], f"{path}.{key}")


def portability_problems(schema: dict[str, Any], *, admits_null: bool) -> list[str]:
    """What the Inspector's ``--strict`` check (and a single-type dialect) would object to."""
    problems = []
    for path, node in nodes(schema):
        if isinstance(node.get("type"), list):
            problems.append(f"{path}: type array {node['type']}")
        if not admits_null and (None in (node.get("enum") or []) or node.get("type") == "null"
                                or ("default" in node and node["default"] is None)):
            problems.append(f"{path}: null in an input schema")
        if not {"type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "properties", "items"} & node.keys():
            problems.append(f"{path}: no type")
    return problems


async def test_error_results_never_carry_content_their_output_schema_rejects(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {name for name, _, _ in ERROR_CALLS} <= tools.keys()
    for name, arguments, code in ERROR_CALLS:
        result = await client.call_tool(name, arguments)
        schema = tools[name].output_schema
        if result.structured_content is not None and schema is not None:  # what the TypeScript SDK checks
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(result.structured_content))
            assert not errors, (name, errors[0].message)
        assert result.is_error and result.structured_content is None, name
        payload = json.loads(result.content[0].text)  # the message is in the text block, as JSON
        error = payload if name.startswith("agent_zoo") else payload["error"]  # AgentZoo's own shape
        assert error["code"] == code, (name, error)
        assert error["message"] and "Traceback" not in error["message"]
    unknown = error_of(await client.call_tool("get", {"id": "0000000000000000"}))
    assert unknown["message"].startswith("no document with id '0000000000000000'")


async def test_every_tool_schema_is_portable(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) >= 10
    problems = {}
    for tool in tools:
        found = portability_problems(tool.input_schema, admits_null=False)
        if tool.output_schema is not None:
            found += portability_problems(tool.output_schema, admits_null=True)
        if found:
            problems[tool.name] = found
    assert not problems, json.dumps(problems, indent=1)[:3000]


async def test_explicit_null_for_an_optional_argument_still_means_its_default(client: Client) -> None:
    """The schemas no longer mention null, but a client that sends one gets what it got before."""
    searched = await client.call_tool("search", {"query": "tantivy", "mode": None, "limit": None, "filters": None})
    assert not searched.is_error and searched.structured_content["results"]
    doc_id = searched.structured_content["results"][0]["id"]
    got = await client.call_tool("get", {"id": doc_id, "chunk": None, "offset": None, "max_chars": None})
    assert not got.is_error and got.structured_content["id"] == doc_id
    echoed = await client.call_tool("echo", {"text": "hi", "repeat": None})
    assert echoed.structured_content == {"result": {"echo": "> hi", "length": 2}}


async def test_structured_results_still_match_the_published_output_schemas(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    searched = await client.call_tool("search", {"query": "tantivy", "explain": True})
    doc = await client.call_tool("get", {"id": searched.structured_content["results"][0]["id"]})
    for name, result in (("search", searched), ("get", doc), ("sources", await client.call_tool("sources", {})),
                         ("echo", await client.call_tool("echo", {"text": "x"})),
                         ("agent_list", await client.call_tool("agent_list", {}))):
        schema = tools[name].output_schema
        assert schema is not None, name
        jsonschema.Draft202012Validator(schema).validate(result.structured_content)


@pytest.mark.parametrize(("schema", "accepted", "rejected"), [
    ({"type": "object", "properties": {"m": {"type": ["string", "null"], "enum": ["a", "b", None], "default": None}}},
     [{}, {"m": "a"}], [{"m": "c"}, {"m": 1}]),
    ({"type": "object", "properties": {"f": {"anyOf": [{"type": "object", "properties": {"x": {"type": "integer"}}},
                                                       {"type": "null"}]}}},
     [{}, {"f": {"x": 1}}], [{"f": {"x": "1"}}, {"f": 3}]),
    ({"type": "object", "properties": {"v": {"type": ["string", "integer", "null"]}}},
     [{"v": "a"}, {"v": 1}], [{"v": 1.5}, {"v": []}]),
])
def test_portable_input_keeps_every_constraint_but_null(schema: dict[str, Any], accepted: list[Any],
                                                       rejected: list[Any]) -> None:
    portable = jsonschema.Draft202012Validator(portable_input(schema))
    assert all(portable.is_valid(i) for i in accepted) and not any(portable.is_valid(i) for i in rejected)
    assert not portability_problems(portable_input(schema), admits_null=False)


@pytest.mark.parametrize("instance", [{"m": None}, {"m": "a"}, {"m": "c"}, {"m": 1}, {}, {"r": None}, {"r": [1]}])
def test_portable_output_accepts_exactly_what_the_original_does(instance: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {
        "m": {"type": ["string", "null"], "enum": ["a", "b", None], "description": "m"},
        "r": {"description": "anything"}}}
    original, portable = schema, portable_output(schema)
    assert portable is not None and not portability_problems(portable, admits_null=True)
    assert (jsonschema.Draft202012Validator(original).is_valid(instance)
            == jsonschema.Draft202012Validator(portable).is_valid(instance))

