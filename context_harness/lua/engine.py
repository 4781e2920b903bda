"""A Lua script loaded in THIS process: parsed once, called many times, safe to call from several threads.

``LocalScript`` runs inside a Lua worker process (``lua/worker.py``); the tool, connector and agent
layers use ``lua/script.py``'s ``LuaScript``, which sends each call to such a worker and kills the
worker when a call outlives its deadline. ``LocalScript`` owns a small pool of sandboxes (each
runtime is single-threaded; a call takes one, runs, gives it back), the
host APIs and the ``context`` bridge, and turns every failure into a ``HarnessError``:

- ``Timeout`` when the wall-clock limit passed (pure Lua loops and blocking host calls alike);
- ``error_class`` (``ToolError`` for tools and connectors, ``AgentError`` for agents) for script
  errors, memory exhaustion and results that are not JSON-like data;
- ``ConfigError`` when the script cannot be read, compiled or its top level fails at load.

Example (what a worker does for a Lua agent hook)::

    script = LocalScript(path, name="planner", kind="agent", global_name="agent", lua_config=cfg.lua)
    prompt = script.call_function("agent.resolve", args, config, CONTEXT, context=harness_context)
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lupa.lua54 import lua_type

from context_harness.errors import AgentError, ConfigError, HarnessError, Timeout, ToolError
from context_harness.lua.bridge import ContextBridge, ScriptContext
from context_harness.lua.convert import ConversionError, array, to_lua, to_py
from context_harness.lua.grant import Grant
from context_harness.lua.host import HostAPI
from context_harness.lua.runtime import DEFAULT_MEMORY_LIMIT, HostLimits, Sandbox, ScriptFailure

log = logging.getLogger(__name__)

DEFAULT_TIMEOUTS = {"tool": 30.0, "agent": 30.0, "connector": 300.0}
LOAD_TIMEOUT = 5.0  # top-level code and metadata: short, whatever the call timeout is
MAX_SOURCE_BYTES = 5_000_000
MAX_RESULT_BYTES = 16_000_000
MAX_RESULT_NODES = 250_000

T = TypeVar("T")


class _Context:
    """Marker: pass ``CONTEXT`` among ``call_function`` args to hand the script its ``context`` table."""

    def __repr__(self) -> str:
        return "CONTEXT"

    def __reduce__(self) -> str:  # pickles as a reference to the one module-level marker
        return "CONTEXT"


CONTEXT = _Context()


class Results:
    """What a ``convert`` callback receives: the raw Lua ``values`` and checks that run in the sandbox
    under the call's deadline (``bad_items``); only valid while the callback runs."""

    def __init__(self, sandbox: Sandbox, values: tuple[Any, ...], deadline: float) -> None:
        self.sandbox = sandbox
        self.values = values
        self.deadline = deadline

    def bad_items(self, array: Any, *, max_nodes: int, max_bytes: int) -> dict[int, str]:
        return self.sandbox.bad_items(array, deadline=self.deadline, max_nodes=max_nodes, max_bytes=max_bytes)


def _default_limits() -> HostLimits:
    from context_harness.config import LuaConfig  # only here: a worker gets its limits as plain data

    return LuaConfig()


def read_source(path: Path, what: str) -> bytes:
    """The script's text; ``ConfigError`` when it is missing, unreadable, too large or bytecode."""
    try:
        source = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what}: script not found: {path}") from None
    except OSError:
        raise ConfigError(f"{what}: cannot read script {path}") from None
    if len(source) > MAX_SOURCE_BYTES:
        raise ConfigError(f"{what}: {path} is larger than {MAX_SOURCE_BYTES} bytes")
    if source.startswith(b"\x1bLua"):
        raise ConfigError(f"{what}: {path} is precompiled bytecode; only Lua source is accepted")
    return source


class _Instance:
    def __init__(self, sandbox: Sandbox, bridge: ContextBridge) -> None:
        self.sandbox = sandbox
        self.bridge = bridge


class LocalScript:
    """One script file in its sandbox(es).

    ``kind`` (``tool``, ``connector``, ``agent``) picks the default timeout (30 s / 300 s / 30 s)
    and the error class; ``global_name`` (e.g. ``"tool"``) is set from the chunk's return value
    when the script ends with ``return tool`` instead of assigning the global.
    """

    def __init__(self, path: str | Path, *, name: str, kind: str = "tool", lua_config: HostLimits | None = None,
                 timeout: float | None = None, memory_limit: int | None = None, env: list[str] | tuple[str, ...] = (),
                 config: dict[str, Any] | None = None, global_name: str | None = None,
                 error_class: type[HarnessError] | None = None, max_instances: int = 2,
                 source: bytes | None = None, grant: Grant | None = None) -> None:
        self.path = Path(path)
        self.name = name
        self.kind = kind
        self.lua_config = lua_config or _default_limits()
        self.timeout = float(timeout) if timeout else DEFAULT_TIMEOUTS.get(kind, 30.0)
        self.memory_limit = memory_limit
        self.env = list(env)
        self.config = dict(config or {})
        self.global_name = global_name
        self.grant = grant
        self.error_class = error_class or (AgentError if kind == "agent" else ToolError)
        self.max_instances = max(1, max_instances)
        self.what = f"Lua {kind} '{name}'"
        self.source = self._read_source() if source is None else source
        self.fingerprint = hashlib.sha256(self.source).hexdigest()
        self._cond = threading.Condition()
        self._idle: list[_Instance] = []
        self._count = 1
        self._idle.append(self._new_instance(ConfigError))

    # -- loading ----------------------------------------------------------------------------

    def _read_source(self) -> bytes:
        return read_source(self.path, self.what)

    def _new_instance(self, error_class: type[HarnessError]) -> _Instance:
        sandbox = Sandbox(self.memory_limit)
        HostAPI(sandbox, label=f"{self.kind}:{self.name}", script_dir=self.path.resolve().parent,
                lua_config=self.lua_config, env_names=self.env, grant=self.grant).install()
        refusal = None if self.grant is None or self.grant.allows("context") else self.grant.refusal()
        bridge = ContextBridge(sandbox, self.config, refusal)
        where = f"{self.what} ({self.path})"
        try:
            chunk = sandbox.compile(self.source, self.path.name)
            returned = sandbox.run(chunk, (), min(self.timeout, LOAD_TIMEOUT))
        except ScriptFailure as failure:
            if failure.kind == "timeout":
                raise error_class(f"{where}: loading took longer than {min(self.timeout, LOAD_TIMEOUT):g} s; "
                                  "move slow work into the functions the host calls") from None
            if failure.kind == "memory":
                raise error_class(f"{where}: ran out of memory while loading") from None
            raise error_class(f"{where}: {failure.message}") from None
        if self.global_name and sandbox.lookup(self.global_name) is None and returned:
            if lua_type(returned[0]) == "table":
                sandbox.api.set(self.global_name.encode(), returned[0])
        return _Instance(sandbox, bridge)

    def changed(self) -> bool:
        """True when the file on disk differs from what was loaded (for reloads)."""
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest() != self.fingerprint
        except OSError:
            return True

    # -- pool -------------------------------------------------------------------------------

    def _acquire(self, wait: float) -> _Instance:
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_instances:
                    self._count += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Timeout(f"{self.what} is busy; no runtime became free within {wait:g} s")
                self._cond.wait(left)
        try:
            return self._new_instance(self.error_class)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, instance: _Instance, keep: bool) -> None:
        with self._cond:
            if keep:
                self._idle.append(instance)
            else:
                self._count -= 1
            self._cond.notify()

    # -- calling ----------------------------------------------------------------------------

    def call_function(self, path: str, *args: Any, context: ScriptContext | None = None,
                      timeout: float | None = None,
                      convert: Callable[[Results], T] | None = None) -> Any:
        """Call the global function at dotted ``path`` (e.g. ``"tool.execute"``) with ``args``.

        Python args are converted to Lua (dicts/lists -> tables); the ``CONTEXT`` marker becomes the
        script's ``context`` table, bound to ``context`` for this call. Returns the first Lua result
        as JSON-like Python data, or ``convert(Results)`` when given (``convert`` runs while the
        runtime is held; it may raise ``ConversionError``, ``ScriptFailure`` or a ``HarnessError``).
        """
        limit = float(timeout) if timeout else self.timeout
        deadline = time.monotonic() + limit
        instance = self._acquire(limit)
        keep = True
        try:
            sandbox = instance.sandbox
            fn = sandbox.lookup(path)
            if lua_type(fn) != "function":
                raise self.error_class(f"{self.what}: the script does not define function {path}")
            lua_args = tuple(instance.bridge.table if a is CONTEXT else to_lua(sandbox.lua, a) for a in args)
            instance.bridge.current = context
            try:
                values = sandbox.run(fn, lua_args, deadline=deadline)
            except ScriptFailure as failure:
                keep = self._healthy(sandbox)
                raise self._error(failure, path, limit) from None
            finally:
                instance.bridge.current = None
            try:
                if convert is not None:
                    return convert(Results(sandbox, values, deadline))
                result = values[0] if values else None
                sandbox.check_data(result, deadline=deadline, max_nodes=MAX_RESULT_NODES, max_bytes=MAX_RESULT_BYTES)
                return to_py(result, what="result", max_nodes=MAX_RESULT_NODES, max_bytes=MAX_RESULT_BYTES)
            except ScriptFailure as failure:
                keep = self._healthy(sandbox)
                if failure.kind == "error":
                    raise self.error_class(f"{self.what} returned an invalid value: {failure.message}") from None
                raise self._error(failure, path, limit) from None
            except ConversionError as exc:
                raise self.error_class(f"{self.what} returned an invalid value: {exc.message}") from None
        finally:
            self._release(instance, keep)

    def evaluate(self, snippet: str, *, timeout: float = LOAD_TIMEOUT, limit: float | None = None) -> Any:
        """Run trusted Lua ``snippet`` in the script's environment (e.g. to read metadata) and return
        its first result as JSON-like data; errors raise ``ConfigError`` (naming ``limit``, default
        ``timeout``, when it ran out of time)."""
        instance = self._acquire(timeout)
        keep = True
        try:
            sandbox = instance.sandbox
            deadline = time.monotonic() + timeout
            stage = "cannot read its metadata"
            try:
                fn = sandbox.compile(snippet.encode(), "metadata", trusted=True)
                values = sandbox.run(fn, (), deadline=deadline)
                stage = "invalid metadata"
                sandbox.check_data(values[0] if values else None, deadline=deadline, max_nodes=100_000,
                                   max_bytes=1_000_000)
            except ScriptFailure as failure:
                keep = self._healthy(sandbox)
                if failure.kind == "timeout":
                    raise ConfigError(f"{self.what}: reading its metadata took longer than "
                                      f"{limit or timeout:g} s") from None
                raise ConfigError(f"{self.what}: {stage}: {failure.message}") from None
            try:
                return to_py(values[0] if values else None, what=self.global_name or "metadata",
                             max_nodes=100_000, max_bytes=1_000_000)
            except ConversionError as exc:
                raise ConfigError(f"{self.what}: invalid metadata: {exc.message}") from None
        finally:
            self._release(instance, keep)

    def _healthy(self, sandbox: Sandbox) -> bool:
        """Keep a runtime after a failure unless its globals hold most of the memory cap."""
        sandbox.collect()
        return sandbox.memory_used() < 0.75 * sandbox.memory_limit

    def _error(self, failure: ScriptFailure, path: str, limit: float) -> HarnessError:
        if failure.kind == "timeout":
            return Timeout(f"{self.what} timed out after {limit:g} s (set `timeout` in its config to allow longer)")
        if failure.kind == "memory":
            mb = (self.memory_limit or DEFAULT_MEMORY_LIMIT) / 1_048_576
            return self.error_class(f"{self.what} ran out of memory (limit {mb:g} MB; set `memory_limit` "
                                    "in its config to allow more)")
        return self.error_class(f"{self.what} failed: {failure.message}")


ItemRow = tuple[int, Any, "str | None"]  # (index, item as data or None, why it is invalid or None)


def item_rows(results: Results, *, max_nodes: int, max_bytes: int) -> tuple[str | None, list[ItemRow]]:
    """A connector's array result as ``(None, rows)``: each item converted to data, or the reason it
    is not data within the caps; ``(what it is instead, [])`` when the result is not an array."""
    result = results.values[0] if results.values else None
    rows = array(result)
    if rows is None:
        return lua_kind(result), []
    bad = results.bad_items(result, max_nodes=max_nodes, max_bytes=max_bytes)
    out: list[ItemRow] = []
    for index, row in rows:
        if index in bad:
            out.append((index, None, bad[index]))
            continue
        try:
            out.append((index, to_py(row, what=f"item {index}", max_nodes=max_nodes, max_bytes=max_bytes), None))
        except ConversionError as exc:
            out.append((index, None, str(exc)))
    return None, out


def lua_kind(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, bytes):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {lua_type(value) or 'value'}"
