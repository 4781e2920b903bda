"""``HarnessContext``: the blocking ``context`` an agent resolves against, backed by a ``Harness``.

Lua agents see it as ``context.search/get/sources``; Python agents get the object itself. It must
be used from a worker thread (it calls the Harness's ``*_sync`` methods). It counts searches and
fetches, which ``ctx agent test`` reports.
"""

from __future__ import annotations

from typing import Any

from context_harness.validation import parse_search


class HarnessContext:
    def __init__(self, harness: Any) -> None:
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


__all__ = ["HarnessContext"]
