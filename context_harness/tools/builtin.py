"""The built-in tools over a ``Harness``: ``search``, ``get``, ``sources``, ``recent`` and ``related``.

They register in the ``ToolSet`` exactly as Lua tools do; each parses its arguments with
``context_harness.common.validation`` (the same functions every adapter uses) and calls one Harness method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from context_harness.common.validation import parse, parse_get, parse_recent, parse_related, parse_search
from context_harness.models import (
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

# Keywords that say nothing a client validates with or a model needs once the tool's description and
# input schema have said it: dropped from every published schema (``title``) or from results' (all three).
ARGUMENT_NOISE = frozenset({"title"})
RESULT_NOISE = frozenset({"title", "description", "default"})
SCHEMA_MAPS = ("properties", "patternProperties", "$defs")  # their keys are names, not keywords
SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SUBSCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")
SAID_ANYWAY: dict[str, Any] = {"additionalProperties": True, "deprecated": False}  # the keywords' own defaults
REF_SIBLINGS = frozenset({"$ref", "title", "description", "default"})  # a ``$ref`` with these is still inlined


def schema_of(model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
    """The model's JSON Schema as ``tools/list`` publishes it: flattened (``flat_schema``), without pydantic's
    ``title``s or the model's docstring (written for this code's readers).

    A result's schema (``mode="serialization"``) is published for validation only: what its fields mean is
    said once, in the tool's description and its arguments' descriptions, so it carries no descriptions or
    defaults, and a definition it uses more than once stays one ``$defs`` entry. That keeps the five default
    tools' ``tools/list`` under 12,000 bytes (``benchmarks/tool_list.py``; tests/server/test_tool_list.py).
    """
    result = mode == "serialization"
    schema = model.model_json_schema(mode=mode, schema_generator=PublishedSchema)  # type: ignore[arg-type]
    schema.pop("title", None)
    schema.pop("description", None)
    published = without(flat_schema(schema, share=result), RESULT_NOISE if result else ARGUMENT_NOISE)
    return enums_untyped(published) if result else published


def enums_untyped(node: Any) -> Any:
    """A result schema whose ``enum``s go without the ``type`` their values already have (``null`` among
    them for a nullable one, instead of an ``anyOf`` branch). Not for arguments: single-type dialects
    (Gemini function declarations) want a ``type`` beside an ``enum``."""
    if not isinstance(node, dict):
        return node
    out = _with_subschemas(node, enums_untyped)
    if isinstance(out.get("enum"), list) and "type" in out:
        del out["type"]
    return out


class PublishedSchema(GenerateJsonSchema):
    """Pydantic's generator, except that a result field left out when it is None (``exclude_if``) is not
    published as nullable: a client never sees it null."""

    def model_field_schema(self, schema: core_schema.ModelField) -> JsonSchemaValue:
        exclude_if = schema.get("serialization_exclude_if")
        if self.mode == "serialization" and exclude_if is not None and exclude_if(None):
            return self.generate_inner(_not_null(schema["schema"]))
        return super().model_field_schema(schema)


def _not_null(schema: CoreSchema) -> CoreSchema:
    """``schema`` without its outermost ``nullable`` (under a ``default`` wrapper too)."""
    if schema["type"] == "nullable":
        return schema["schema"]
    if schema["type"] == "default":
        return {**schema, "schema": _not_null(schema["schema"])}
    return schema


def without(node: Any, keywords: frozenset[str]) -> Any:
    """``node`` (a schema) without ``keywords`` anywhere in it, nor keywords that state their default
    (``SAID_ANYWAY``); property names and values (an ``enum``'s, a ``default``) are left alone."""
    if not isinstance(node, dict):
        return node
    return {key: value for key, value in _with_subschemas(node, lambda sub: without(sub, keywords)).items()
            if key not in keywords and SAID_ANYWAY.get(key, ...) is not value}


def _with_subschemas(node: dict[str, Any], change: Callable[[Any], Any]) -> dict[str, Any]:
    """A copy of the schema ``node`` with ``change`` applied to each of its direct subschemas."""
    out = dict(node)
    for key, value in node.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: change(sub) for name, sub in value.items()}
        elif key in SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [change(sub) for sub in value]
        elif key in SUBSCHEMA_ONE:
            out[key] = change(value)
    return out


def flat_schema(schema: dict[str, Any], share: bool = False) -> dict[str, Any]:
    """The same schema with ``$defs`` inlined and ``anyOf [X, null]`` written as ``type: [X, "null"]``.

    Clients validate every result against the output schema; jsonschema walks ``$ref`` and ``anyOf``
    branches slowly (the MCP Python SDK spent ~3 ms per 12-result search on them), and a flat
    schema is easier to read too. Recursive models keep their ``$ref``s; with ``share``, so does a
    definition used more than once (``related``'s three lists of one item shape): said once, it costs
    a client one ``$ref`` lookup per item, and a search result, used once, stays inline.
    """
    defs = schema.get("$defs", {})
    shared = {name for name, uses in _ref_counts(schema).items() if uses > 1} if share else set()
    kept: set[str] = set()

    def flat(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [flat(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and not node.keys() - REF_SIBLINGS:
            name = ref.removeprefix("#/$defs/")
            if name in defs and name not in seen and name not in shared:
                return {**flat(defs[name], seen | {name}), **{k: v for k, v in node.items() if k != "$ref"}}
            kept.add(name)
            return node
        out = {key: flat(value, seen) for key, value in node.items() if key != "$defs"}
        if isinstance(out.get("$ref"), str):
            kept.add(out["$ref"].removeprefix("#/$defs/"))
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
    if kept:  # a recursive or shared definition still needs its entry (and the entries it refers to)
        done: dict[str, Any] = {}
        while kept - done.keys():
            name = min(kept - done.keys())
            done[name] = flat(defs[name], frozenset({name})) if name in defs else {}
        flattened["$defs"] = {name: done[name] for name in sorted(done) if name in defs}
    return flattened


def _ref_counts(schema: dict[str, Any]) -> dict[str, int]:
    """How many ``$ref``s name each ``$defs`` entry, anywhere in ``schema``."""
    counts: dict[str, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                counts[name] = counts.get(name, 0) + 1
            for value in node.values():
                walk(value)

    walk(schema)
    return counts


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
            description="Search the local knowledge base: the best-matching documents with short snippets. Each "
            "result has an `id` and the `chunk` (under `heading`) its snippet comes from: call `get` with both to "
            "read that section.",
            input_schema=schema_of(SearchRequest), output_schema=schema_of(SearchResponse, "serialization"),
            run=search, render=render_search),
        FunctionTool(
            name="get", title="Get a document",
            description="Read a document by a search result's `id`, one window at a time: with its `chunk`, that "
            f"chunk's section (at most {SECTION_CHARS:,} characters by default); with `offset`, the text from there; "
            "with neither, from the start. `range` says where `body` lies in the document and `chunks` which chunks "
            "it holds; while `next_offset` is not null, call again with `offset: next_offset` to read on.",
            input_schema=schema_of(GetRequest), output_schema=schema_of(DocumentOut, "serialization"), run=get,
            render=render_document),
        FunctionTool(
            name="sources", title="List sources",
            description="List the configured sources (folders, git repositories, scripts) with their document "
            "and chunk counts, `status` (and why it is not ok) and last sync.",
            input_schema=schema_of(NoArguments), output_schema=schema_of(SourcesResponse, "serialization"),
            run=sources, render=render_sources),
        FunctionTool(
            name="recent", title="Recent changes",
            description="List the documents added, updated or deleted most recently, newest first, with when "
            "the index saw each change.",
            input_schema=schema_of(RecentRequest), output_schema=schema_of(RecentResponse, "serialization"),
            run=recent, render=render_recent),
        FunctionTool(
            name="related", title="Related documents",
            description="A document's links (Markdown and [[wikilinks]]), backlinks and nearest neighbours by "
            "meaning, each marked with `why`; links matching no indexed document are `unresolved`.",
            input_schema=schema_of(RelatedRequest), output_schema=schema_of(RelatedResponse, "serialization"),
            run=related, render=render_related),
    ]


__all__ = ["KnowledgeBase", "builtin_tools", "flat_schema", "schema_of"]
