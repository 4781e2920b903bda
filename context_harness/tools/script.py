"""Lua tools as ``Tool``s: a ``LuaTool`` run in a worker thread, with a ``context`` bound to the Harness.

``HarnessContext`` is what a script's ``context.search/get/sources`` reach: the Harness's blocking
methods, called directly from the worker thread that runs the script (never HTTP, never a hop back
to the event loop). Results reach every adapter as ``{"result": <what tool.execute returned>}``.
"""

from __future__ import annotations

from typing import Any

import anyio

from context_harness.lua.bridge import ScriptContext
from context_harness.lua.tools import LuaTool
from context_harness.validation import parse_search

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"description": "What the Lua tool's execute function returned."}},
    "required": ["result"],
}


class HarnessContext:
    """``ScriptContext`` over a ``Harness``: ``search_sync``/``get_sync``/``sources_sync``.

    Blocking; called from the worker thread running the script. Requests are parsed exactly as the
    ``search`` tool parses its arguments, so a bad request is the same ``bad_request`` message.
    """

    def __init__(self, harness: Any) -> None:
        self.harness = harness

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        response = self.harness.search_sync(parse_search(request))
        return [r.model_dump(mode="json") for r in response.results]

    def get(self, id: str) -> dict[str, Any]:
        return self.harness.get_sync(id).model_dump(mode="json")

    def sources(self) -> list[dict[str, Any]]:
        return [s.model_dump(mode="json") for s in self.harness.sources_sync().sources]


class ScriptTool:
    """A ``Tool`` backed by a ``LuaTool``. Arguments are validated (defaults filled) before the
    script runs; the run happens in a worker thread and is bounded by the script's own timeout."""

    builtin = False
    output_schema = RESULT_SCHEMA

    def __init__(self, lua: LuaTool, context: ScriptContext | None = None) -> None:
        self.lua = lua
        self.context = context
        self.name = lua.name
        self.description = lua.description
        self.title = lua.title
        self.input_schema = lua.input_schema
        self.annotations = dict(lua.annotations)

    @property
    def path(self) -> Any:
        return self.lua.script.path

    def call_sync(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Blocking call (CLI, benchmarks, worker threads): ``{"result": ...}`` or a ``HarnessError``."""
        return {"result": self.lua.call(self.lua.validate(arguments), self.context)}

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        params = self.lua.validate(arguments)  # bad arguments fail fast, without a thread hop
        result = await anyio.to_thread.run_sync(self.lua.call, params, self.context)
        return {"result": result}


__all__ = ["RESULT_SCHEMA", "HarnessContext", "ScriptTool"]
