"""A fake of the Harness's blocking context (what Lua tools, connectors and agents call): canned
documents, every request recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_harness.errors import NotFound

# What Lua tools and connectors see.
SCRIPT_DOCS = {
    "d1": {"id": "d1", "title": "Lua sandbox", "source": "filesystem:docs", "source_id": "lua.md",
           "body": "The Lua sandbox removes io and os. It caps memory. It enforces a wall-clock timeout.",
           "score": 0.91, "snippet": "The <b>Lua</b> sandbox", "source_url": None, "updated_at": "2026-01-05T10:00:00Z"},
    "d2": {"id": "d2", "title": "Connectors", "source": "script:api", "source_id": "7",
           "body": "Connectors pull documents from folders, git repositories and scripts.",
           "score": 0.42, "snippet": "Connectors pull", "source_url": "https://example.test/7",
           "updated_at": "2026-01-06T10:00:00Z"},
}
SCRIPT_SOURCES = [{"name": "filesystem:docs", "configured": True, "healthy": True, "document_count": 1}]

# What agents see: runbooks.
AGENT_DOCS = {
    "r1": {"id": "r1", "title": "Runbook: search down", "source": "filesystem:docs", "source_id": "rb.md",
           "score": 2.0, "snippet": "Run ctx sources first.", "body": "## Severity levels\n- sev1: page"},
    "r2": {"id": "r2", "title": "Severity policy", "source": "filesystem:docs", "source_id": "sev.md",
           "score": 1.0, "snippet": "sev2 means degraded.", "body": "sev2 means degraded."},
}
AGENT_SOURCES = [{"name": "filesystem:docs", "document_count": 2}]


@dataclass
class FakeContext:
    """``search`` (with a ``source`` filter), ``get`` and ``sources`` over ``docs``; records
    ``requests`` (searches) and ``fetched`` (ids passed to ``get``)."""

    docs: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(SCRIPT_DOCS))
    source_list: list[dict[str, Any]] = field(default_factory=lambda: list(SCRIPT_SOURCES))
    requests: list[dict[str, Any]] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.requests.append(request)
        source = (request.get("filters") or {}).get("source")
        hits = [{k: v for k, v in d.items() if k != "body"} for d in self.docs.values()
                if source is None or d["source"] == source]
        return hits[: request.get("limit", 12)]

    def get(self, id: str) -> dict[str, Any]:
        self.fetched.append(id)
        if id not in self.docs:
            raise NotFound(f"document '{id}' not found")
        return dict(self.docs[id], chunks=[{"index": 0, "text": self.docs[id]["body"]}])

    def sources(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.source_list]


def script_context() -> FakeContext:
    return FakeContext()


def agent_context() -> FakeContext:
    return FakeContext(dict(AGENT_DOCS), list(AGENT_SOURCES))
