"""The built-in tools over a ``Harness``: ``search``, ``get``, ``sources``, ``recent`` and ``related``.

They register in the ``ToolSet`` exactly as Lua tools do; each parses its arguments with
``context_harness.common.validation`` (the same functions every adapter uses) and calls one Harness method.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from context_harness.common.validation import parse, parse_get, parse_recent, parse_related, parse_search
from context_harness.models import (
    MAX_GET_CHARS,
    SECTION_CHARS,
    DocumentOut,
    GetRequest,
    NoArguments,
    RecentRequest,
    RecentResponse,
    RelatedRequest,
    RelatedResponse,
    SearchRequest,
    SearchResponse,
    SourcesResponse,
)
from context_harness.tools.base import FunctionTool
from context_harness.tools.render import render_document, render_recent, render_related, render_search, render_sources


def schema_of(model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
    """The model's JSON Schema, flattened (see ``flat_schema``)."""
    schema = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    schema.pop("title", None)
    return flat_schema(schema)


def flat_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with ``$defs`` inlined and ``anyOf [X, null]`` written as ``type: [X, "null"]``.

    Clients validate every result against the output schema; jsonschema walks ``$ref`` and ``anyOf``
    branches slowly (the MCP Python SDK spent ~3 ms per 12-result search on them), and a flat
    schema is easier to read too. Recursive models keep their ``$ref``s.
    """
    defs = schema.get("$defs", {})
    kept_refs = False

    def flat(node: Any, seen: frozenset[str]) -> Any:
        nonlocal kept_refs
        if isinstance(node, list):
            return [flat(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            name = ref.removeprefix("#/$defs/")
            if name in defs and name not in seen:
                return flat(defs[name], seen | {name})
            kept_refs = True
            return node
        out = {key: flat(value, seen) for key, value in node.items() if key != "$defs"}
        kept_refs = kept_refs or "$ref" in out
        branches = out.get("anyOf")
        if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
            other = branches[0] if branches[1] == {"type": "null"} else branches[1]
            if (isinstance(other, dict) and isinstance(other.get("type"), str)
                    and not {"anyOf", "oneOf", "allOf", "const"} & other.keys()):
                del out["anyOf"]
                out = {**other, **out, "type": [other["type"], "null"]}
                if "enum" in other:
                    out["enum"] = [*other["enum"], None]
        return out

    flattened = flat(schema, frozenset())
    if kept_refs:
        flattened["$defs"] = defs  # a recursive model still needs its definitions
    return flattened


class KnowledgeBase(Protocol):
    """The async document calls of ``Harness`` (search, get, sources) that the built-in tools wrap; a
    protocol, so that ``tools/`` never imports ``harness.py``, which sits above it."""

    async def search(self, request: SearchRequest) -> SearchResponse: ...

    async def get(self, request: GetRequest) -> DocumentOut: ...

    async def sources(self) -> SourcesResponse: ...

    async def recent(self, request: RecentRequest) -> RecentResponse: ...

    async def related(self, request: RelatedRequest) -> RelatedResponse: ...


def builtin_tools(harness: KnowledgeBase) -> list[FunctionTool]:
    """``search``, ``get`` and ``sources`` bound to ``harness``."""

    async def search(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await harness.search(parse_search(arguments))).model_dump(mode="json")

    async def get(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await harness.get(parse_get(arguments))).model_dump(mode="json")

    async def sources(arguments: dict[str, Any]) -> dict[str, Any]:
        parse(NoArguments, arguments)
        return (await harness.sources()).model_dump(mode="json")

    async def recent(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await harness.recent(parse_recent(arguments))).model_dump(mode="json")

    async def related(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await harness.related(parse_related(arguments))).model_dump(mode="json")

    return [
        FunctionTool(
            name="search", title="Search the knowledge base",
            description="Search the local knowledge base and return the best-matching documents with short "
            "snippets. Use plain words or quoted phrases; filter by source, tags or dates. Each result has an "
            "`id` and the `chunk` (under `heading`) its snippet comes from: call `get` with both (`{id, chunk}`) to "
            f"read that chunk's section (at most {SECTION_CHARS:,} characters by default) rather than the whole "
            "document.",
            input_schema=schema_of(SearchRequest), output_schema=schema_of(SearchResponse, "serialization"),
            run=search, render=render_search),
        FunctionTool(
            name="get", title="Get a document",
            description="Read a document by the id a search result gave, one window at a time. With the "
            "result's `chunk`, the answer is that chunk's section: from its heading to the next heading of the same "
            "or a higher level (in a document without headings, the text around the chunk), at most "
            f"{SECTION_CHARS:,} characters of `body` by default, centred on the chunk when the section is longer. "
            "With `offset`, the text from that character offset; with neither, from the start (both at most "
            "the server's `get_max_chars` by default). `max_chars` asks for more or less; `max_chars: 0` for no "
            f"limit but {MAX_GET_CHARS:,} characters (the most one answer holds): the whole document, or a chunk's "
            "whole section. `range` says "
            "where `body` lies in the document and `chunks` which chunks (with their headings) it holds; when "
            "`next_offset` is not null, call again with `offset: next_offset` to read on (a smaller `offset` "
            "reads what comes before).",
            input_schema=schema_of(GetRequest), output_schema=schema_of(DocumentOut, "serialization"), run=get,
            render=render_document),
        FunctionTool(
            name="sources", title="List sources",
            description="List the configured sources (folders, git repositories, scripts) with document and "
            "chunk counts, health and the time of the last sync.",
            input_schema=schema_of(NoArguments), output_schema=schema_of(SourcesResponse, "serialization"),
            run=sources, render=render_sources),
        FunctionTool(
            name="recent", title="Recent changes",
            description="List the documents added, updated or deleted most recently, newest first, with when "
            "the index saw each change. `since` takes a date, a date-time or a duration such as `7d`; `source` "
            "narrows to one source.",
            input_schema=schema_of(RecentRequest), output_schema=schema_of(RecentResponse, "serialization"),
            run=recent, render=render_recent),
        FunctionTool(
            name="related", title="Related documents",
            description="For a document id: the documents it links to (Markdown links and [[wikilinks]]), "
            "those linking to it (backlinks), and its nearest neighbours by meaning, each marked with `why`; "
            "links that match no indexed document are listed as `unresolved`.",
            input_schema=schema_of(RelatedRequest), output_schema=schema_of(RelatedResponse, "serialization"),
            run=related, render=render_related),
    ]


__all__ = ["KnowledgeBase", "builtin_tools", "flat_schema", "schema_of"]
