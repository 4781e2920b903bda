"""The built-in tools over a ``Harness``: ``search``, ``get`` and ``sources``.

They register in the ``ToolRegistry`` exactly as Lua tools do; each parses its arguments with
``context_harness.validation`` (the same functions every adapter uses) and calls one Harness method.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from context_harness.errors import BadRequest
from context_harness.models import DocumentOut, GetRequest, SearchRequest, SearchResponse, SourcesResponse
from context_harness.validation import parse_get, parse_search

READ_ONLY_LOCAL = {"readOnlyHint": True, "openWorldHint": False}


def schema_of(model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
    schema = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    schema.pop("title", None)
    return schema


@dataclass
class BuiltinTool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    run: Callable[[dict[str, Any]], Awaitable[BaseModel]]
    annotations: dict[str, Any] = field(default_factory=lambda: dict(READ_ONLY_LOCAL))
    builtin: bool = True

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return (await self.run(arguments)).model_dump(mode="json")


def builtin_tools(harness: Any) -> list[BuiltinTool]:
    """``search``, ``get`` and ``sources`` bound to ``harness``."""

    async def search(arguments: dict[str, Any]) -> BaseModel:
        return await harness.search(parse_search(arguments))

    async def get(arguments: dict[str, Any]) -> BaseModel:
        return await harness.get(parse_get(arguments).id)

    async def sources(arguments: dict[str, Any]) -> BaseModel:
        if arguments:
            raise BadRequest(f"{', '.join(sorted(arguments))}: unknown argument (sources takes no arguments)")
        return await harness.sources()

    return [
        BuiltinTool(
            name="search", title="Search the knowledge base",
            description="Search the local knowledge base and return the best-matching documents with snippets. "
            "Use plain words or quoted phrases; filter by source, tags or dates. Each result has an `id` to pass "
            "to `get` for the full text.",
            input_schema=schema_of(SearchRequest), output_schema=schema_of(SearchResponse, "serialization"),
            run=search),
        BuiltinTool(
            name="get", title="Get a document",
            description="Fetch one document by the id a search result gave: its full text, metadata and chunks.",
            input_schema=schema_of(GetRequest), output_schema=schema_of(DocumentOut, "serialization"), run=get),
        BuiltinTool(
            name="sources", title="List sources",
            description="List the configured sources (folders, git repositories, scripts) with document and "
            "chunk counts, health and the time of the last sync.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=schema_of(SourcesResponse, "serialization"), run=sources),
    ]


__all__ = ["BuiltinTool", "builtin_tools", "schema_of"]
