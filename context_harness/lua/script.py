"""A Lua script as the tool, connector and agent layers see it: loaded once, called many times,
safe to call from several threads, and run in supervised worker processes (``lua/pool.py``).

Every call goes to a worker that holds the script's sandbox (``engine.LocalScript``). The worker
enforces the deadline itself (count hook, blocking host calls); when it has not answered
``KILL_GRACE`` seconds after the deadline (a long C call: pattern backtracking, a huge
``string.rep`` or ``table.concat``) it is killed and replaced, and the call fails with the same
``Timeout`` as any other. A worker that crashes fails the call with ``error_class``; the next call
gets a fresh worker. Failures map to ``HarnessError`` as in ``LocalScript``:

- ``Timeout`` when the wall-clock limit passed;
- ``error_class`` (``ToolError`` for tools and connectors, ``AgentError`` for agents) for script
  errors, memory exhaustion, results that are not JSON-like data and crashed workers;
- ``ConfigError`` when the script cannot be read, compiled or its top level fails at load.

Example (what a Lua agent hook needs)::

    script = LuaScript(path, name="planner", kind="agent", global_name="agent", lua_config=cfg.lua)
    prompt = script.call_function("agent.resolve", args, config, CONTEXT, context=harness_context)
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from context_harness import errors
from context_harness.config import LuaConfig
from context_harness.errors import AgentError, ConfigError, HarnessError, Timeout, ToolError
from context_harness.lua.bridge import ScriptContext
from context_harness.lua.engine import CONTEXT, DEFAULT_TIMEOUTS, LOAD_TIMEOUT, ItemRow, read_source
from context_harness.lua.grant import Grant
from context_harness.lua.pool import Busy, Crashed, Killed, WorkerProcess, shared_pool
from context_harness.lua.runtime import HostSettings

log = logging.getLogger(__name__)

KILL_GRACE = 0.5  # seconds past the deadline before a worker that has not answered is killed
LUA_LOGGER = "context_harness.lua"


class LuaScript:
    """One script file, run in the shared worker pool.

    ``kind`` (``tool``, ``connector``, ``agent``) picks the default timeout (30 s / 300 s / 30 s)
    and the error class; ``global_name`` (e.g. ``"tool"``) is set from the chunk's return value
    when the script ends with ``return tool`` instead of assigning the global. At most
    ``max_instances`` calls of this script run at once. Construction loads the script in a worker
    (``ConfigError`` when it fails).
    """

    def __init__(self, path: str | Path, *, name: str, kind: str = "tool", lua_config: LuaConfig | None = None,
                 timeout: float | None = None, memory_limit: int | None = None, env: list[str] | tuple[str, ...] = (),
                 config: dict[str, Any] | None = None, global_name: str | None = None,
                 error_class: type[HarnessError] | None = None, max_instances: int = 2,
                 grant: Grant | None = None) -> None:
        self.path = Path(path)
        self.name = name
        self.kind = kind
        self.timeout = float(timeout) if timeout else DEFAULT_TIMEOUTS.get(kind, 30.0)
        self.config = dict(config or {})
        self.global_name = global_name
        self.error_class = error_class or (AgentError if kind == "agent" else ToolError)
        self.max_instances = max(1, max_instances)
        self.what = f"Lua {kind} '{name}'"
        source = read_source(self.path, self.what)
        self.fingerprint = hashlib.sha256(source).hexdigest()
        if grant is not None and not grant.binds(self.fingerprint):
            ext_id = grant.owner.split(" ", 1)[0]
            raise ConfigError(f"{self.what} ({self.path}) is not the code that was enabled or pinned for "
                              f"{grant.owner}: it changed since; `ctx registry list` says how, `ctx registry enable "
                              f"{ext_id}` runs it as it is now")
        self.key = uuid.uuid4().hex
        self.spec: dict[str, Any] = {
            "path": str(self.path), "name": name, "kind": kind,
            "lua_config": HostSettings.of(lua_config or LuaConfig()),
            "timeout": self.timeout, "memory_limit": memory_limit, "env": list(env), "config": self.config,
            "global_name": global_name, "error_class": self.error_class, "source": source, "grant": grant}
        self.grant = grant
        self._env_names = sorted(set(self.spec["lua_config"].env_allow) | set(env) if grant is None else grant.env)
        self._slots = threading.BoundedSemaphore(self.max_instances)
        load_limit = min(self.timeout, LOAD_TIMEOUT)
        self._request(("load",), load_limit, lambda: ConfigError(
            f"{self.what} ({self.path}): loading took longer than {load_limit:g} s; "
            "move slow work into the functions the host calls"))

    def changed(self) -> bool:
        """True when the file on disk differs from what was loaded (for reloads)."""
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest() != self.fingerprint
        except OSError:
            return True

    # -- calling ----------------------------------------------------------------------------

    def call_function(self, path: str, *args: Any, context: ScriptContext | None = None,
                      timeout: float | None = None, deadline: float | None = None) -> Any:
        """Call the global function at dotted ``path`` (e.g. ``"tool.execute"``) with ``args``.

        Python args are converted to Lua (dicts/lists -> tables); the ``CONTEXT`` marker becomes the
        script's ``context`` table, bound to ``context`` for this call. Returns the first Lua result
        as JSON-like Python data. ``deadline`` (monotonic): when the call's time began earlier, e.g.
        waiting for a slot; the timeout then counts from there.
        """
        return self._call(path, args, context, timeout, None, deadline)

    def call_items(self, path: str, *args: Any, max_nodes: int, max_bytes: int,
                   timeout: float | None = None) -> tuple[str | None, list[ItemRow]]:
        """Call a function returning an array (``connector.scan``): ``(None, [(index, data, why_invalid)])``,
        or ``(what it returned instead, [])``."""
        kind, rows = self._call(path, args, None, timeout, (max_nodes, max_bytes))
        return kind, [(row[0], row[1], row[2]) for row in rows]

    def _call(self, path: str, args: tuple[Any, ...], context: ScriptContext | None, timeout: float | None,
              items: tuple[int, int] | None, deadline: float | None = None) -> Any:
        limit = float(timeout) if timeout else self.timeout

        def timed_out() -> HarnessError:
            return Timeout(f"{self.what} timed out after {limit:g} s (set `timeout` in its config to allow longer)")

        return self._request(("call", path, args, limit, context is not None, items), limit, timed_out,
                             context=context, until=deadline)

    def evaluate(self, snippet: str, *, timeout: float | None = None) -> Any:
        """Run trusted Lua ``snippet`` in the script's environment (e.g. to read metadata) and return
        its first result as JSON-like data; errors raise ``ConfigError``. Bounded like loading:
        ``timeout`` defaults to the script's timeout, at most ``LOAD_TIMEOUT``."""
        if timeout is None:
            timeout = min(self.timeout, LOAD_TIMEOUT)
        return self._request(("eval", snippet, timeout), timeout, lambda: ConfigError(
            f"{self.what}: reading its metadata took longer than {timeout:g} s"))

    # -- the worker round trip ----------------------------------------------------------------

    def _request(self, request: tuple[Any, ...], limit: float, timed_out: Any, *,
                 context: ScriptContext | None = None, until: float | None = None) -> Any:
        """Run ``request`` in a worker by ``until`` (default: ``limit`` seconds from now). Waiting for
        a slot and a worker counts against it; starting a new worker process does not."""
        until = time.monotonic() + limit if until is None else until
        if not self._slots.acquire(timeout=max(0.0, until - time.monotonic())):
            raise Timeout(f"{self.what} is busy; no runtime became free within {limit:g} s")
        try:
            pool = shared_pool()
            try:
                worker = pool.acquire(until)
            except Busy:
                raise Timeout(f"{self.what}: no Lua worker became free within {limit:g} s") from None
            except Crashed as exc:
                raise self.error_class(f"{self.what}: {exc.message}") from None
            until += worker.start_seconds  # starting a worker process does not count against the script
            worker.start_seconds = 0.0
            try:
                reply = self._exchange(worker, request, until, context)
            except Killed:
                pool.discard(worker)
                raise timed_out() from None
            except Crashed as exc:
                pool.discard(worker)
                raise self.error_class(f"{self.what}: {exc.message}; the next call starts a new one") from None
            except BaseException:  # the host side failed mid-exchange: the worker's state is unknown
                pool.discard(worker)
                raise
            pool.release(worker)
        finally:
            self._slots.release()
        if request[0] == "call" and time.monotonic() > until:
            raise timed_out()  # a C call ran past the deadline and the script ended before the hook fired
        if reply[0] == "done":
            return reply[1]
        if request[0] == "call" and reply[1] == "Timeout":
            raise timed_out()
        raise _error(reply, self.error_class)

    def _exchange(self, worker: WorkerProcess, request: tuple[Any, ...], until: float,
                  context: ScriptContext | None) -> tuple[Any, ...]:
        op, rest = request[0], request[1:]
        # What the worker mirrors from this process per request: the log level and the variables
        # ``env.get`` may read (their current values, set or unset).
        meta = {"log_level": logging.getLogger(LUA_LOGGER).getEffectiveLevel(),
                "environ": {name: os.environ.get(name) for name in self._env_names}}
        # The worker's own deadline: what is left of the limit after waiting for a worker.
        rest = _with_remaining(op, rest, until)
        kill_at = until + KILL_GRACE
        spec = None if self.key in worker.loaded else self.spec
        reply = worker.exchange((op, self.key, spec, meta, *rest), kill_at=kill_at, context=context)
        if reply[0] == "missing":
            reply = worker.exchange((op, self.key, self.spec, meta, *rest), kill_at=kill_at, context=context)
        if reply[0] == "done":
            worker.loaded.add(self.key)
        return reply


def _with_remaining(op: str, rest: tuple[Any, ...], until: float) -> tuple[Any, ...]:
    left = max(0.001, until - time.monotonic())
    if op == "call":
        path, args, _limit, with_context, items = rest
        return (path, args, left, with_context, items)
    if op == "eval":
        return (rest[0], left, rest[1])  # the snippet, the time left, the limit to name in messages
    return rest


def _error(reply: tuple[Any, ...], error_class: type[HarnessError]) -> HarnessError:
    if len(reply) != 3 or reply[0] != "fail":
        return error_class("the Lua worker sent an unexpected reply")
    cls = getattr(errors, str(reply[1]), None)
    if not (isinstance(cls, type) and issubclass(cls, HarnessError)):
        cls = error_class
    return cls(str(reply[2]))


__all__ = ["CONTEXT", "LuaScript"]
