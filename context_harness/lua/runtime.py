"""The sandboxed Lua 5.4 runtime: one ``lupa.lua54.LuaRuntime`` hardened by ``boot.lua``.

What a script can reach is an allow-list (see ``boot.lua``): no ``io``, ``os`` beyond
``time/clock/date``, ``require``, ``package``, ``dofile``, ``loadfile``, ``debug``, bytecode
``load``, ``string.dump``, ``collectgarbage`` or ``python``; Python objects never cross into Lua
(host functions are wrapped in Lua closures and every value is converted), and lupa's attribute
access is denied outright. Memory is capped by the allocator (``max_memory``); time by a count
hook comparing ``time.monotonic()`` with a deadline, which blocking host calls honour too.

A ``Sandbox`` is NOT thread-safe: ``LuaScript`` serialises access to each one.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

import lupa.lua54 as lupa

DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024
HOST_BYTES_PER_VALUE = 128  # what one value a host function builds costs (Python object + Lua slot)
HOOK_EVERY = 1000  # instructions between deadline checks (~3% overhead)
MAX_ERROR_CHARS = 2000

log = logging.getLogger(__name__)


class HostLimits(Protocol):
    """What the host APIs read from ``[lua]`` (``config.LuaConfig`` or ``HostSettings``)."""

    @property
    def http_allow(self) -> list[str] | None: ...

    @property
    def env_allow(self) -> list[str]: ...

    @property
    def max_response_bytes(self) -> int: ...


@dataclass(frozen=True)
class HostSettings:
    """``[lua]`` as plain data for a worker process (which then need not import the config module)."""

    http_allow: list[str] | None
    env_allow: list[str]
    max_response_bytes: int

    @classmethod
    def of(cls, limits: HostLimits) -> HostSettings:
        allow = limits.http_allow
        return cls(None if allow is None else list(allow), list(limits.env_allow), limits.max_response_bytes)


class ScriptFailure(Exception):
    """A run ended badly. ``kind`` is ``error``, ``memory`` or ``timeout``; ``message`` is
    the script-level explanation (a Lua error message, never a Python traceback)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("attribute access into Python objects is not allowed")


_BOOT: str | None = None


def _boot_source() -> str:
    global _BOOT
    if _BOOT is None:
        _BOOT = resources.files(__package__).joinpath("boot.lua").read_text(encoding="utf-8")
    return _BOOT


class Sandbox:
    """One hardened Lua state. ``deadline`` is the monotonic time the current run must end by."""

    def __init__(self, memory_limit: int | None = None) -> None:
        self.memory_limit = memory_limit or DEFAULT_MEMORY_LIMIT
        self.deadline = float("inf")
        self.lua = lupa.LuaRuntime(
            register_eval=False,
            register_builtins=False,
            unpack_returned_tuples=True,
            encoding=None,
            attribute_filter=_deny_attributes,
            max_memory=self.memory_limit,
        )
        self.api = self.lua.execute(_boot_source(), time.monotonic, HOOK_EVERY, self.host_room)

    # -- time -------------------------------------------------------------------------------

    def remaining(self) -> float:
        """Seconds left in the current run (may be negative)."""
        return self.deadline - time.monotonic()

    # -- code -------------------------------------------------------------------------------

    def compile(self, source: bytes, chunkname: str, *, trusted: bool = False) -> Any:
        """Compile text source in the sandbox env; ``ScriptFailure('error')`` on a syntax error.

        ``trusted`` host snippets (metadata readers) see the script's globals but the real ``type``,
        ``rawget``, ``pairs``, ... whatever the script replaced in its own environment."""
        compile_fn = self.api.compile_trusted if trusted else self.api.compile
        try:
            result = compile_fn(source, ("=" + chunkname).encode())
        except lupa.LuaError as exc:  # memory error while parsing
            raise ScriptFailure("memory", _lua_error_text(exc)) from None
        if isinstance(result, tuple):
            raise ScriptFailure("error", _clip(_text(result[1])))
        if lupa.lua_type(result) != "function":
            raise ScriptFailure("error", "the script could not be compiled")
        return result

    def lookup(self, path: str) -> Any:
        """The value at dotted ``path`` in the script's globals (raw lookups), or None."""
        return self.api.lookup(path.encode())

    def run(self, fn: Any, args: tuple[Any, ...], timeout: float | None = None, *,
            deadline: float | None = None) -> tuple[Any, ...]:
        """Call Lua function ``fn`` with already-converted ``args``; return its Lua results.

        The run ends by ``deadline`` (monotonic) or after ``timeout`` seconds. Raises
        ``ScriptFailure`` on error, memory exhaustion or timeout. The runtime stays usable.
        """
        if deadline is None:
            deadline = time.monotonic() + (timeout if timeout is not None else 30.0)
        self.deadline = deadline
        try:
            out = self.api.run(self.deadline, fn, *args)
        except lupa.LuaError as exc:
            # Only reachable when the allocator fails outside the protected coroutine.
            self.collect()
            raise ScriptFailure("memory", _lua_error_text(exc)) from None
        finally:
            self.deadline = float("inf")
        if not isinstance(out, tuple):
            out = (out,)
        status = out[0]
        if status == b"ok":
            count = out[1]
            values = out[2:]
            return tuple(values) + (None,) * (count - len(values))
        self.collect()
        if status == b"timeout":
            raise ScriptFailure("timeout", "timed out")
        if status == b"memory":
            raise ScriptFailure("memory", "not enough memory")
        raise ScriptFailure("error", _clip(_text(out[1] if len(out) > 1 else b"unknown error")))

    def check_data(self, value: Any, *, deadline: float, max_nodes: int, max_bytes: int,
                   max_depth: int = 50) -> None:
        """``ScriptFailure('error', why)`` unless ``value`` is JSON-like data within the limits."""
        self.run(self.api.check, (value, max_nodes, max_bytes, max_depth), deadline=deadline)

    def bad_items(self, array: Any, *, deadline: float, max_nodes: int, max_bytes: int,
                  max_depth: int = 50) -> dict[int, str]:
        """Indexes of ``array`` items that are not data within the limits, with the reason."""
        (bad,) = self.run(self.api.check_items, (array, max_nodes, max_bytes, max_depth), deadline=deadline)
        return {int(k): _text(v) for k, v in bad.items()}

    def collect(self) -> None:
        try:
            self.lua.gccollect()
        except lupa.LuaError:  # pragma: no cover - a __gc error; __gc is refused in scripts
            log.debug("Lua garbage collection reported an error", exc_info=True)

    def memory_used(self) -> int:
        return int(self.lua.get_memory_used())

    def host_room(self) -> tuple[int, int]:
        """``(values, bytes)`` a host function may build for the current call: what is left of the
        memory cap, with each value (table, string, number) costing ``HOST_BYTES_PER_VALUE``. So
        ``json.encode``, ``json.parse`` and ``http.*`` responses count against the script's cap."""
        room = max(0, self.memory_limit - self.memory_used())
        return room // HOST_BYTES_PER_VALUE, room


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _clip(message: str) -> str:
    if len(message) > MAX_ERROR_CHARS:
        return message[:MAX_ERROR_CHARS] + " ... (message truncated)"
    return message


def _lua_error_text(exc: BaseException) -> str:
    if isinstance(exc, lupa.LuaMemoryError):
        return "not enough memory"
    return "the Lua runtime failed"


class HostError(Exception):
    """Raised by a host function: becomes a Lua error (catchable by ``pcall``) with ``message``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HostTimeout(Exception):
    """Raised by a host function when the script's deadline passed: ends the run as a timeout."""
