"""``HarnessContext``: the blocking ``context`` that Lua tools, Lua agents and Python agents reach.

Scripts see it as ``context.search/get/sources``; Python agents get the object itself. It is used
from the worker thread that runs the script (it calls the Harness's ``*_sync`` methods directly:
never HTTP, never a hop back to the event loop). Requests are parsed exactly as the ``search`` tool
parses its arguments, so a bad request gives the same ``bad_request`` message. It counts searches
and fetches, which ``ctx agent test`` reports.
"""

from __future__ import annotations

from typing import Any, Protocol

from context_harness.common.validation import parse_search
from context_harness.models import DocumentOut, SearchRequest, SearchResponse, SourcesResponse


class BlockingKnowledgeBase(Protocol):
    """The document calls of ``KnowledgeBase`` in their blocking form (``Harness.*_sync``), for the
    scripts and agents that run on a worker thread; a protocol, so ``context.py`` stays below ``harness.py``."""

    def search_sync(self, request: SearchRequest) -> SearchResponse: ...

    def get_sync(self, doc_id: str) -> DocumentOut: ...

    def sources_sync(self) -> SourcesResponse: ...


class HarnessContext:
    def __init__(self, harness: BlockingKnowledgeBase) -> None:
        self.harness = harness
        self.searches = 0
        self.fetches = 0

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """``{query, mode?, limit?, filters?}`` -> the results of ``POST /tools/search``."""
        parsed = parse_search(request)
        self.searches += 1
        response = self.harness.search_sync(parsed)
        return [r.model_dump(mode="json", exclude_none=True) for r in response.results]

    def get(self, id: str) -> dict[str, Any]:
        self.fetches += 1
        return self.harness.get_sync(id).model_dump(mode="json")

    def sources(self) -> list[dict[str, Any]]:
        return [s.model_dump(mode="json") for s in self.harness.sources_sync().sources]


__all__ = ["BlockingKnowledgeBase", "HarnessContext"]
