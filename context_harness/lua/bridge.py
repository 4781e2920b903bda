"""The ``context`` table a script receives: ``context.search/get/sources`` call the host's context
object (the Harness, not HTTP) and ``context.config`` holds the script's free TOML keys.

The host passes any object with blocking ``search(request: dict)``, ``get(id: str)`` and
``sources()`` methods; it is bound for the duration of one call only. Errors it raises become Lua
errors the script can ``pcall`` (a ``Timeout`` still ends the run as a timeout).
"""

from __future__ import annotations

from typing import Any, Protocol

from context_harness.lua.convert import to_lua
from context_harness.lua.host import as_str, as_table, guard
from context_harness.lua.runtime import HostError, Sandbox

FILTER_KEYS = ("source", "tags", "since", "until")
MAX_ID_BYTES = 4096  # a document id is far shorter; a longer one is refused before it is copied


class ScriptContext(Protocol):
    """What the host passes as ``context``: blocking calls into the Harness."""

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]: ...

    def get(self, id: str) -> dict[str, Any]: ...

    def sources(self) -> list[dict[str, Any]]: ...


def search_request(query: Any, options: Any) -> dict[str, Any]:
    """Both call forms -> one request ``{query, mode?, limit?, filters: {source, tags, since, until}}``.

    ``context.search("q", {mode=, limit=, source=})`` (the original) and
    ``context.search({query=, mode=, limit=, filters={source=}})`` (the agent spec).
    """
    if isinstance(query, (bytes, int, float)) and not isinstance(query, bool):
        request = as_table(options, "options")
        request["query"] = as_str(query, "the query")
    elif query is not None and not isinstance(query, bool):
        request = as_table(query, "the request")
    else:
        raise HostError("expected a query string or a request table")
    filters = request.get("filters") or {}
    if not isinstance(filters, dict):
        raise HostError("filters must be a table")
    for key in FILTER_KEYS:
        if key in request:
            filters.setdefault(key, request.pop(key))
    if filters:
        request["filters"] = filters
    else:
        request.pop("filters", None)
    if not isinstance(request.get("query"), str):
        raise HostError("the request needs a query string")
    return request


class ContextBridge:
    """One per sandbox: the Lua ``context`` table and the context object bound to the current call.
    ``refusal``: a script from a registry that did not declare ``context`` gets this error from
    ``context.search/get/sources`` (``context.config`` stays)."""

    def __init__(self, sandbox: Sandbox, config: dict[str, Any], refusal: str | None = None) -> None:
        self.current: ScriptContext | None = None
        self.refusal = refusal
        lua = sandbox.lua
        functions = lua.table_from({
            b"search": guard(sandbox, "context.search", self.search),
            b"get": guard(sandbox, "context.get", self.get),
            b"sources": guard(sandbox, "context.sources", self.sources),
        })
        extra = lua.table_from({b"config": to_lua(lua, config)})
        self.table = sandbox.api.host_table(functions, extra, b"context.")

    def _context(self, what: str) -> ScriptContext:
        if self.refusal is not None:
            raise HostError(self.refusal)
        if self.current is None:
            raise HostError("not available here (no knowledge base is attached)")
        return self.current

    def search(self, query: Any = None, options: Any = None) -> list[Any]:
        context = self._context("context.search")
        result: Any = context.search(search_request(query, options))
        if isinstance(result, dict) and "results" in result:
            result = result["results"]
        return list(result or [])

    def get(self, doc_id: Any = None) -> Any:
        if isinstance(doc_id, bytes) and len(doc_id) > MAX_ID_BYTES:
            raise HostError(f"the document id is {len(doc_id)} bytes long; ids are at most {MAX_ID_BYTES} "
                            "(pass an id from context.search's results)")
        return self._context("context.get").get(as_str(doc_id, "the document id"))

    def sources(self) -> list[Any]:
        result: Any = self._context("context.sources").sources()
        if isinstance(result, dict) and "sources" in result:
            result = result["sources"]
        return list(result or [])


__all__ = ["MAX_ID_BYTES", "ContextBridge", "ScriptContext", "search_request"]
