"""ChatGPT's connector tools (``[server] profile``): ``search`` and ``fetch`` in the shapes OpenAI
documents for MCP servers used by ChatGPT connectors (deep research, company knowledge) and its API.

A session gets them in place of the standard ``search`` (and beside ``get``) when its client is
OpenAI's (``clientInfo`` name ``openai-mcp``) or ``[server] profile = "chatgpt"`` says so; every other
session keeps the standard tools, unchanged. The session's other tools stay listed (ChatGPT's
developer mode calls them)::

    search {query}  -> {"results": [{"id", "title", "url"}]}
    fetch  {id}     -> {"id", "title", "text", "url", "metadata"}

As OpenAI asks, the result's content is exactly one text item holding that JSON (compact); the
same object is the ``structuredContent``, described by the tool's ``outputSchema``.

- ``search`` runs the standard search with the server's defaults (mode, ``retrieval.final_limit``);
  one entry a document. ``title`` is the document's title, else its ``source_id``.
- ``fetch`` returns the whole body, at most ``MAX_GET_CHARS`` (1,000,000) characters like ``get``
  with ``max_chars: 0``; a longer document is cut there, ``metadata.truncated`` is true and the
  text ends with a line saying so (``get`` with ``offset`` reads on).
- ``url``: the console's page of the document (``<public_url>/ui/doc?id=ID``) when ``[server]
  public_url`` is set and ``[ui] enabled`` is not false; else the document's ``source_url`` (a
  ``file://`` URL, or the source's own link); else ``ctx://documents/ID`` (the MCP resource).
- ``metadata``: ``source``, ``source_id``, ``content_type``, ``total_chars``, ``truncated``, and
  ``source_url``, ``author``, ``created_at``, ``updated_at`` when known; then the document's own
  metadata (front matter: ``tags`` ...) under its own names where they do not clash.

Errors are ``isError`` results like every tool's: an unknown id is ``not_found``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from context_harness.config import Config
from context_harness.errors import BadRequest
from context_harness.models import MAX_GET_CHARS, DocumentOut, GetRequest, SearchRequest
from context_harness.tools.base import FunctionTool, Tool
from context_harness.tools.builtin import KnowledgeBase

CHATGPT = "chatgpt"
CONSOLE_DOCUMENT = "/ui/doc?id="  # the console's document page (console.markdown.doc_href)
DOCUMENT_URI = "ctx://documents/"  # the MCP resource of a document (server.mcp.DOCUMENT_PREFIX)
STANDS_FOR = {"search": "search", "fetch": "get"}  # an agent may use a ChatGPT tool when it may use this one
MAX_ID_CHARS = 200

STRING = {"type": "string"}
SEARCH_INPUT = {"type": "object", "properties": {"query": {
    "type": "string", "description": "What to look for, in plain words; quote a phrase to require it verbatim."}},
    "required": ["query"], "additionalProperties": False}
SEARCH_OUTPUT = {"type": "object", "properties": {"results": {"type": "array", "items": {
    "type": "object", "properties": {"id": STRING, "title": STRING, "url": STRING},
    "required": ["id", "title", "url"]}}}, "required": ["results"]}
FETCH_INPUT = {"type": "object", "properties": {"id": {
    "type": "string", "description": "A document id from a `search` result."}},
    "required": ["id"], "additionalProperties": False}
FETCH_OUTPUT = {"type": "object", "properties": {
    "id": STRING, "title": STRING, "text": STRING, "url": STRING, "metadata": {"type": "object"}},
    "required": ["id", "title", "text", "url", "metadata"]}


def render_compact(payload: dict[str, Any]) -> str:
    """The one text item OpenAI's clients read: the payload as compact JSON."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def one_string(arguments: Any, name: str) -> str:
    """The only argument, ``name``: a non-blank string (``BadRequest`` otherwise, or for any other key)."""
    if not isinstance(arguments, Mapping):
        raise BadRequest("arguments must be a JSON object")
    extra = sorted(set(arguments) - {name})
    if extra:
        raise BadRequest(f"unknown argument(s): {', '.join(map(str, extra))}; this tool takes only {name!r}")
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{name} is required: a non-empty string")
    return value


def document_url(config: Config, doc_id: str, source_url: str | None) -> str:
    """Where a reader of the answer can open the document (see the module docstring)."""
    base = config.server.public_url
    if base and config.ui.enabled is not False:
        return base + CONSOLE_DOCUMENT + quote(doc_id, safe="")
    return source_url or DOCUMENT_URI + doc_id


def document_metadata(doc: DocumentOut) -> dict[str, Any]:
    """``fetch``'s ``metadata`` (see the module docstring)."""
    ours: dict[str, Any] = {"source": doc.source, "source_id": doc.source_id, "source_url": doc.source_url,
                            "content_type": doc.content_type, "author": doc.author, "created_at": doc.created_at,
                            "updated_at": doc.updated_at, "total_chars": doc.total_chars,
                            "truncated": doc.truncated}
    ours = {key: value for key, value in ours.items() if value is not None}
    return ours | {key: value for key, value in doc.metadata.items() if key not in ours}


def fetched_text(doc: DocumentOut) -> str:
    """The body; a cut one ends with a line saying where, and how to read on."""
    if not doc.truncated or doc.range is None:
        return doc.body
    return (f"{doc.body}\n\n[cut: characters {doc.range.start:,}-{doc.range.end:,} of {doc.total_chars:,}; "
            f"call `get` with id {doc.id!r} and offset {doc.next_offset} to read on]")


def chatgpt_tools(kb: KnowledgeBase, config: Config) -> list[Tool]:
    """``search`` and ``fetch`` in OpenAI's shapes over ``kb`` (see the module docstring)."""

    async def search(arguments: dict[str, Any]) -> dict[str, Any]:
        query = one_string(arguments, "query")
        if len(query) > 20_000:
            raise BadRequest("query is too long: at most 20,000 characters")
        found = await kb.search(SearchRequest(query=query))
        results: dict[str, dict[str, str]] = {}
        for hit in found.results:
            results.setdefault(hit.id, {"id": hit.id, "title": hit.title or hit.source_id,
                                        "url": document_url(config, hit.id, hit.source_url)})
        return {"results": list(results.values())}

    async def fetch(arguments: dict[str, Any]) -> dict[str, Any]:
        doc_id = one_string(arguments, "id").strip()
        if len(doc_id) > MAX_ID_CHARS:
            raise BadRequest(f"id is too long: at most {MAX_ID_CHARS} characters")
        doc = await kb.get(GetRequest(id=doc_id, max_chars=0))
        return {"id": doc.id, "title": doc.title or doc.source_id, "text": fetched_text(doc),
                "url": document_url(config, doc.id, doc.source_url), "metadata": document_metadata(doc)}

    return [
        FunctionTool(
            name="search", title="Search the knowledge base",
            description="Search the knowledge base for documents matching a query. Returns results with an `id`, "
            "a `title` and a `url` to cite; pass an `id` to `fetch` to read the document.",
            input_schema=SEARCH_INPUT, output_schema=SEARCH_OUTPUT, run=search, render=render_compact),
        FunctionTool(
            name="fetch", title="Fetch a document",
            description="Fetch a whole document by the `id` a `search` result gave: its title, full text "
            f"(at most {MAX_GET_CHARS:,} characters), a `url` to cite and its metadata (source, dates, tags).",
            input_schema=FETCH_INPUT, output_schema=FETCH_OUTPUT, run=fetch, render=render_compact),
    ]


def with_profile(tools: list[Tool], profile: list[Tool]) -> list[Tool]:
    """``tools`` with each of ``profile``'s in place of the tool of its name; the rest appended."""
    by_name = {tool.name: tool for tool in profile}
    merged = [by_name.pop(tool.name, tool) for tool in tools]
    return merged + list(by_name.values())


__all__ = ["CHATGPT", "FETCH_INPUT", "FETCH_OUTPUT", "SEARCH_INPUT", "SEARCH_OUTPUT", "STANDS_FOR", "chatgpt_tools",
           "document_url", "render_compact", "with_profile"]
