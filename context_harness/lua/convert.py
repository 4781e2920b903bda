"""Values across the Lua boundary: Python data -> Lua tables, Lua values -> JSON-like Python.

The runtime runs with ``encoding=None``: Lua strings arrive in Python as ``bytes`` and every
Python ``str`` must be encoded before it reaches Lua (lupa would otherwise wrap it as a Python
object). Nothing here ever hands a Python object to Lua: unknown types become strings.

Lua -> Python conversion is raw (``lua_next``; no metamethods run) and budgeted: depth, node
count and bytes are capped, so cycles, DAG bombs and huge outputs fail with a clear message
instead of hanging the host.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import time
from collections.abc import Mapping
from typing import Any

from lupa.lua54 import lua_type

from context_harness.lua.runtime import HostTimeout

MAX_DEPTH = 50
LUA_MIN_INT, LUA_MAX_INT = -(2**63), 2**63 - 1


class ConversionError(Exception):
    """A Lua value cannot become JSON-like data; ``message`` says where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TooLarge(ConversionError):
    """The value holds more values or bytes than the conversion's budget allows."""


def encode_for_lua(obj: Any, budget: Budget | None = None) -> Any:
    """Python data -> structure of bytes/numbers/dicts/lists that ``table_from`` accepts.

    With a ``budget`` every value costs a node and every string its bytes: ``ConversionError`` when
    the data would not fit (a Lua allocation failure inside ``table_from`` would abort the process)."""
    if budget is not None:
        budget.spend(obj)
    if obj is None or isinstance(obj, (bool, float, bytes)):
        return obj
    if isinstance(obj, int):
        return lua_integer(obj)
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogateescape")
    if isinstance(obj, Mapping):
        return {_encode_key(k): encode_for_lua(v, budget) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [encode_for_lua(v, budget) for v in obj]
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat().encode()
    if hasattr(obj, "model_dump"):  # pydantic models at the edges
        return encode_for_lua(obj.model_dump(mode="json"), budget)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return encode_for_lua(dataclasses.asdict(obj), budget)
    return str(obj).encode("utf-8", "surrogateescape")


def lua_integer(value: int) -> int | float:
    """A Python int as Lua keeps it: an integer when it fits in 64 bits, otherwise a float (as Lua
    reads a decimal integer numeral that overflows; beyond the float range, +-inf)."""
    if LUA_MIN_INT <= value <= LUA_MAX_INT:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def lua_number(digits: str) -> int | float:
    """``json.loads``' ``parse_int``: a JSON integer by Lua's number rules (see ``lua_integer``)."""
    if len(digits.lstrip("-")) < 19:
        return int(digits)
    return lua_integer(int(digits)) if len(digits) <= 400 else float(digits)


def _encode_key(key: Any) -> Any:
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    if isinstance(key, int) and not isinstance(key, bool):
        return lua_integer(key)
    if isinstance(key, (bool, float, bytes)):
        return key
    return str(key).encode("utf-8", "surrogateescape")


def to_lua(runtime: Any, obj: Any, budget: Budget | None = None) -> Any:
    """Python value -> Lua value for ``runtime`` (tables built in C by ``table_from``)."""
    encoded = encode_for_lua(obj, budget)
    if isinstance(encoded, (dict, list)):
        return runtime.table_from(encoded, recursive=True)
    return encoded


def text(value: Any) -> str:
    """A Lua string (bytes) as Python text; invalid UTF-8 is replaced, never raised."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class Budget:
    """Caps on one conversion: nodes visited and string bytes produced; past ``deadline``
    (monotonic) a long conversion raises ``HostTimeout`` (checked every ``CHECK_EVERY`` nodes)."""

    __slots__ = ("nodes", "bytes", "max_nodes", "max_bytes", "deadline")

    CHECK_EVERY = 4096

    def __init__(self, max_nodes: int, max_bytes: int, deadline: float | None = None) -> None:
        self.nodes = self.max_nodes = max_nodes
        self.bytes = self.max_bytes = max_bytes
        self.deadline = deadline

    def tick(self, path: str) -> None:
        self.nodes -= 1
        if self.nodes < 0:
            raise TooLarge(f"{path}: too many values (limit {self.max_nodes})")
        if self.deadline is not None and self.nodes % self.CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise HostTimeout()

    def spend(self, obj: Any) -> None:
        """Charge one Python value headed for Lua."""
        self.tick("the value")
        if isinstance(obj, (bytes, str)):
            self.bytes -= len(obj)
            if self.bytes < 0:
                raise TooLarge(f"the value is too large (limit {self.max_bytes} bytes)")


def to_py(value: Any, *, what: str = "result", max_nodes: int = 1_000_000,
          max_bytes: int = 16_000_000, max_depth: int = MAX_DEPTH, deadline: float | None = None) -> Any:
    """Lua value -> JSON-serialisable Python value, or ``ConversionError`` naming the path
    (``HostTimeout`` once ``deadline`` passed)."""
    return _Walk(what, Budget(max_nodes, max_bytes, deadline), max_depth).value(value, 0)


class _Walk:
    """One conversion; ``trail`` holds the path (``result[2].name``), joined only for a message."""

    def __init__(self, what: str, budget: Budget, max_depth: int) -> None:
        self.trail = [what]
        self.budget = budget
        self.max_depth = max_depth

    def fail(self, why: str, error: type[ConversionError] = ConversionError) -> ConversionError:
        return error(f"{''.join(self.trail)}: {why}")

    def value(self, value: Any, depth: int) -> Any:
        budget = self.budget
        budget.nodes -= 1
        if budget.nodes < 0:
            raise self.fail(f"too many values (limit {budget.max_nodes})", TooLarge)
        if budget.deadline is not None and budget.nodes % Budget.CHECK_EVERY == 0 \
                and time.monotonic() > budget.deadline:
            raise HostTimeout()
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, bytes):
            budget.bytes -= len(value)
            if budget.bytes < 0:
                raise self.fail(f"the value is too large (limit {budget.max_bytes} bytes)", TooLarge)
            return value.decode("utf-8", "replace")
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(f"{value} is not a JSON number")
            return value
        kind = lua_type(value)
        if kind != "table":
            raise self.fail(f"a Lua {kind or 'value'} is not data; use only tables, strings, numbers, "
                            "booleans and nil")
        if depth >= self.max_depth:
            raise self.fail(f"nested deeper than {self.max_depth} levels (or contains a cycle)")
        return self.table(value, depth)

    def table(self, value: Any, depth: int) -> Any:
        items = list(value.items())
        if not items:
            return {}
        trail = self.trail
        keys = [k for k, _ in items]
        if all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
            n = len(keys)
            if min(keys) == 1 and max(keys) == n:
                out: list[Any] = [None] * n
                for k, v in items:
                    trail.append(f"[{k}]")
                    out[k - 1] = self.value(v, depth + 1)
                    trail.pop()
                return out
        result: dict[str, Any] = {}
        for k, v in items:
            key = _key(k, "".join(trail))
            if key in result:
                raise self.fail(f"keys {_lua_repr(k)} and {_lua_repr(_other_key(keys, k, key))} both become "
                                f"{key!r} in JSON; keep only one of them")
            trail.append(f".{key}")
            result[key] = self.value(v, depth + 1)
            trail.pop()
        return result


def _key(key: Any, path: str) -> str:
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return str(key)
    raise ConversionError(f"{path}: table keys must be strings or numbers, not a Lua {lua_type(key)}")


def _other_key(keys: list[Any], key: Any, text_key: str) -> Any:
    """The first of ``keys`` other than ``key`` that ``_key`` also turns into ``text_key``."""
    return next(k for k in keys if (type(k) is not type(key) or k != key) and _key(k, "") == text_key)


def _lua_repr(key: Any) -> str:
    """A table key as a script would write it: ``1``, ``"1"``, ``true``."""
    if isinstance(key, bytes):
        return '"' + key.decode("utf-8", "replace") + '"'
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def array(value: Any) -> list[tuple[int, Any]] | None:
    """``(index, item)`` pairs of a Lua array table (raw, in index order), or None when not a table."""
    if lua_type(value) != "table":
        return None
    return sorted(((k, v) for k, v in value.items() if isinstance(k, int) and not isinstance(k, bool)),
                  key=lambda kv: kv[0])
