"""Lua tools as ``Tool``s: a ``LuaTool`` run in a worker thread, with a ``context`` bound to the Harness
(``context.HarnessContext``). Results reach every rim as ``{"result": <what tool.execute returned>}``.

Calls are admitted in two steps, apart from anyio's default thread limiter (the watcher, reloads
and searches never wait behind a Lua call):

1. the tool's own ``CallGate``: at most ``[lua] max_calls_per_tool`` of its calls run at once and at
   most ``[lua] max_queued_per_tool`` wait; one more is ``Busy`` at once. So one slow tool cannot
   take every slot, and another tool still gets one;
2. ``ScriptCalls``: at most ``pool.MAX_WORKERS`` Lua calls of all tools run at once, on threads of
   their own limiter (one per running call, so none waits for a thread once admitted).

The call's ``timeout`` counts from its arrival: time spent waiting at either step is part of it,
so a call's wall time stays within its timeout (plus the worker's kill grace).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import anyio

from context_harness.config import LuaConfig
from context_harness.errors import Busy, Timeout
from context_harness.lua.bridge import ScriptContext
from context_harness.lua.pool import MAX_WORKERS
from context_harness.lua.tools import LuaTool
from context_harness.tools.render import render_result

T = TypeVar("T")

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"description": "What the Lua tool's execute function returned."}},
    "required": ["result"],
}


class ScriptCalls:
    """Every Lua tool call of one catalog: at most ``capacity`` run at once, each on a thread of
    this limiter (never anyio's default one)."""

    def __init__(self, capacity: int = MAX_WORKERS) -> None:
        self.capacity = capacity
        self._admitted = anyio.Semaphore(capacity)
        self._threads = anyio.CapacityLimiter(capacity)

    async def run(self, fn: Callable[[], T], deadline: float, waited_out: Callable[[], Exception]) -> T:
        """Run blocking ``fn`` in a thread once admitted; ``waited_out()`` is raised when no slot
        frees before ``deadline`` (monotonic)."""
        await _acquire(self._admitted, deadline, waited_out)
        try:
            return await anyio.to_thread.run_sync(fn, limiter=self._threads)
        finally:
            self._admitted.release()


class CallGate:
    """One tool's admission: ``running`` calls at once, ``queued`` more waiting, the rest ``Busy``."""

    def __init__(self, running: int, queued: int) -> None:
        self.running = running
        self.queued = queued
        self._slots = anyio.Semaphore(running)
        self._waiting = 0

    @asynccontextmanager
    async def slot(self, deadline: float, what: str, waited_out: Callable[[], Exception]) -> AsyncIterator[None]:
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:
            if self._waiting >= self.queued:
                raise Busy(f"{what} is busy: {self.running} calls of it are running and {self._waiting} waiting, "
                           "the most [lua] max_calls_per_tool and max_queued_per_tool allow; try again shortly"
                           ) from None
            self._waiting += 1
            try:
                await _acquire(self._slots, deadline, waited_out)
            finally:
                self._waiting -= 1
        try:
            yield
        finally:
            self._slots.release()


async def _acquire(semaphore: anyio.Semaphore, deadline: float, waited_out: Callable[[], Exception]) -> None:
    with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
        await semaphore.acquire()
        return
    raise waited_out()


class ScriptTool:
    """A ``Tool`` backed by a ``LuaTool``. Arguments are validated (defaults filled) before the
    script runs; the run happens in a worker thread and is bounded by the script's own timeout,
    counted from the call's arrival (see the module docstring)."""

    builtin = False
    output_schema: dict[str, Any] | None = RESULT_SCHEMA

    def __init__(self, lua: LuaTool, context: ScriptContext | None = None, *, calls: ScriptCalls | None = None,
                 lua_config: LuaConfig | None = None) -> None:
        self.lua = lua
        self.context = context
        self.name = lua.name
        self.description = lua.description
        self.title = lua.title
        self.input_schema = lua.input_schema
        self.annotations = dict(lua.annotations)
        limits = lua_config or LuaConfig()
        self.calls = calls or ScriptCalls()
        self.gate = CallGate(lua.script.max_instances, limits.max_queued_per_tool)

    @property
    def path(self) -> Any:
        return self.lua.script.path

    def render(self, payload: dict[str, Any]) -> str:
        return render_result(payload)

    def call_sync(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Blocking call (CLI, benchmarks, worker threads): ``{"result": ...}`` or a ``HarnessError``."""
        return {"result": self.lua.call(self.lua.validate(arguments), self.context)}

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + self.lua.script.timeout
        params = self.lua.validate(arguments)  # bad arguments fail fast, without a thread hop
        run = partial(self.lua.call, params, self.context, deadline=deadline)
        async with self.gate.slot(deadline, self.lua.script.what, self._waited_out):
            result = await self.calls.run(run, deadline, self._waited_out)
        return {"result": result}

    def _waited_out(self) -> Exception:
        timeout = self.lua.script.timeout
        return Timeout(f"{self.lua.script.what} timed out after {timeout:g} s waiting for a free slot (other "
                       "calls were running; set `timeout` in its config to allow longer, or raise [lua] "
                       "max_calls_per_tool)")


__all__ = ["RESULT_SCHEMA", "CallGate", "ScriptCalls", "ScriptTool"]
