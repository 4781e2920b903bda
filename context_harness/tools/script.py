"""Lua tools as ``Tool``s: a ``LuaTool`` run in a worker thread, with a ``context`` bound to the Harness
(``context.HarnessContext``). Results reach every rim as ``{"result": <what tool.execute returned>}``.
"""

from __future__ import annotations

from typing import Any

import anyio

from context_harness.lua.bridge import ScriptContext
from context_harness.lua.tools import LuaTool
from context_harness.tools.render import render_result

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"description": "What the Lua tool's execute function returned."}},
    "required": ["result"],
}


class ScriptTool:
    """A ``Tool`` backed by a ``LuaTool``. Arguments are validated (defaults filled) before the
    script runs; the run happens in a worker thread and is bounded by the script's own timeout."""

    builtin = False
    output_schema: dict[str, Any] | None = RESULT_SCHEMA

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

    def render(self, payload: dict[str, Any]) -> str:
        return render_result(payload)

    def call_sync(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Blocking call (CLI, benchmarks, worker threads): ``{"result": ...}`` or a ``HarnessError``."""
        return {"result": self.lua.call(self.lua.validate(arguments), self.context)}

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        params = self.lua.validate(arguments)  # bad arguments fail fast, without a thread hop
        result = await anyio.to_thread.run_sync(self.lua.call, params, self.context)
        return {"result": result}


__all__ = ["RESULT_SCHEMA", "ScriptTool"]
