"""Lua tools: ``[tools.script.NAME]`` scripts the model can call.

The script defines::

    tool = {
      name = "echo", description = "...",
      parameters = { {name = "text", type = "string", required = true, description = "...",
                      default = nil, enum = nil}, ... },
      annotations = { readOnlyHint = true },       -- optional; nothing is assumed
    }
    function tool.execute(params, context) ... return <JSON-like value> end

and may end with ``return tool``. The metadata is read inside the sandbox with a short timeout.
The **config key is the tool's name**: if ``tool.name`` differs, the key wins (a notice is logged),
so two configs can load the same script under different names.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from context_harness.common.validation import Declared, check_declared, decode_json
from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import BadRequest, ConfigError
from context_harness.lua.bridge import ScriptContext
from context_harness.lua.script import CONTEXT, LuaScript

log = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
BUILTIN_TOOLS = frozenset({"search", "get", "sources", "recent", "related", "agent_list", "agent_get", "agent_inject"})
PARAM_TYPES = ("string", "number", "integer", "boolean", "array", "object")
ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

METADATA_SNIPPET = """
local t = tool
if type(t) ~= "table" then return nil end
return {name = t.name, description = t.description, title = t.title, parameters = t.parameters,
        annotations = t.annotations, has_execute = type(t.execute) == "function"}
"""


def check_tool_name(name: str) -> None:
    """``ConfigError`` unless ``name`` is a valid, non-built-in tool name."""
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise ConfigError(f"[tools.script.{name}]: tool names must match ^[A-Za-z0-9_.-]{{1,64}}$")
    if name in BUILTIN_TOOLS:
        raise ConfigError(f"[tools.script.{name}]: '{name}' is a built-in tool; choose another name")


@dataclass
class Parameter:
    name: str
    type: str = "string"
    required: bool = False
    description: str = ""
    default: Any = None
    enum: list[Any] | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.description:
            out["description"] = self.description
        if self.default is not None:
            out["default"] = self.default
        if self.enum is not None:
            out["enum"] = list(self.enum)
        return out


def type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


LUA_INT_MIN, LUA_INT_MAX = -(2**63), 2**63 - 1


def fits_lua(value: Any) -> bool:
    """Whether every integer in ``value`` (nested too) is a Lua 5.4 integer (64 bits)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if not LUA_INT_MIN <= item <= LUA_INT_MAX:
                return False
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return True


def _normalise(kind: str, value: Any) -> Any:
    if kind == "integer" and isinstance(value, float):
        return int(value)
    if kind == "array" and value == {}:
        return []
    if kind == "object" and value == []:
        return {}
    return value


def parse_parameters(raw: Any, where: str) -> list[Parameter]:
    if raw is None or raw == {}:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: tool.parameters must be an array of tables like "
                          "{ {name = 'q', type = 'string', required = true} }")
    params: list[Parameter] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw, 1):
        at = f"{where}: tool.parameters[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at} must be a table with name and type")
        name = entry.get("name")
        if not isinstance(name, str) or not PARAM_NAME.match(name):
            raise ConfigError(f"{at}.name must be an identifier-like string")
        if name in seen:
            raise ConfigError(f"{at}: parameter '{name}' is declared twice")
        seen.add(name)
        kind = entry.get("type", "string")
        if kind not in PARAM_TYPES:
            raise ConfigError(f"{at} ('{name}'): type must be one of {', '.join(PARAM_TYPES)}")
        required = entry.get("required", False)
        if not isinstance(required, bool):
            raise ConfigError(f"{at} ('{name}'): required must be true or false")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"{at} ('{name}'): description must be a string")
        enum = entry.get("enum")
        if enum is not None:
            if not isinstance(enum, list) or not enum or not all(type_ok(kind, v) for v in enum):
                raise ConfigError(f"{at} ('{name}'): enum must be a non-empty array of {kind} values")
            enum = [_normalise(kind, v) for v in enum]
        default = entry.get("default")
        if default is not None:
            default = _normalise(kind, default)
            if not type_ok(kind, default):
                raise ConfigError(f"{at} ('{name}'): default must be of type {kind}")
            if enum is not None and default not in enum:
                raise ConfigError(f"{at} ('{name}'): default must be one of the enum values")
        params.append(Parameter(name, kind, required, description, default, enum))
    return params


def parse_annotations(raw: Any, where: str) -> dict[str, Any]:
    if raw is None or raw == {} or raw == []:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: tool.annotations must be a table like {{ readOnlyHint = true }}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ANNOTATION_HINTS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: tool.annotations.{key} must be true or false")
            out[key] = value
        elif key == "title":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: tool.annotations.title must be a string")
            out[key] = value
        else:
            raise ConfigError(f"{where}: unknown annotation '{key}'; use title, {', '.join(ANNOTATION_HINTS)}")
    return out


@dataclass
class ToolInfo:
    name: str
    description: str
    parameters: list[Parameter]
    annotations: dict[str, Any] = field(default_factory=dict)
    title: str | None = None


class LuaTool:
    """A Lua tool loaded from ``[tools.script.NAME]``. Blocking; call from a worker thread.

    ``validate(arguments)`` -> filled arguments or ``BadRequest``; ``call(arguments, context)`` ->
    JSON-like result, or ``BadRequest`` / ``ToolError`` / ``Timeout``. Construction raises
    ``ConfigError`` for a bad name, an unreadable or failing script, or invalid metadata.
    """

    builtin = False

    def __init__(self, name: str, script_config: ScriptConfig, lua_config: LuaConfig | None = None,
                 *, max_instances: int = 2) -> None:
        check_tool_name(name)
        self.name = name
        self.config = script_config
        self.script = LuaScript(
            script_config.path, name=name, kind="tool", lua_config=lua_config, timeout=script_config.timeout,
            memory_limit=script_config.memory_limit, env=script_config.env, config=script_config.extra,
            global_name="tool", max_instances=max_instances, grant=script_config.grant)
        self.info = self._read_info()
        self.description = self.info.description
        self.parameters = self.info.parameters
        self.annotations = self.info.annotations
        self.title = self.info.title
        self.input_schema = self._schema()

    def _read_info(self) -> ToolInfo:
        where = f"[tools.script.{self.name}] ({self.script.path})"
        meta = self.script.evaluate(METADATA_SNIPPET)
        if not isinstance(meta, dict):
            raise ConfigError(f"{where}: the script must define a global table `tool` (or end with `return tool`)")
        if not meta.get("has_execute"):
            raise ConfigError(f"{where}: the script must define function tool.execute(params, context)")
        declared = meta.get("name")
        if declared is not None and declared != self.name:
            log.info("Lua tool %s: tool.name is %r; the config key %r is used as the name",
                     self.script.path, declared, self.name)
        description = meta.get("description")
        if description is None:
            description = f"Lua tool {self.name}"
        if not isinstance(description, str):
            raise ConfigError(f"{where}: tool.description must be a string")
        title = meta.get("title")
        if title is not None and not isinstance(title, str):
            raise ConfigError(f"{where}: tool.title must be a string")
        return ToolInfo(self.name, description, parse_parameters(meta.get("parameters"), where),
                        parse_annotations(meta.get("annotations"), where), title)

    def _schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.parameters},
            "additionalProperties": False,
        }
        required = [p.name for p in self.parameters if p.required]
        if required:
            schema["required"] = required
        return schema

    def validate(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Check types, enums and required parameters; fill defaults. ``BadRequest`` names the parameter."""
        declared = [Declared(p.name, p.required, p.default, p.enum, p.type) for p in self.parameters]
        return check_declared(f"tool '{self.name}'", "parameter", arguments, declared, coerce=self._coerce)

    def _coerce(self, declared: Declared, value: Any) -> Any:
        kind = declared.kind or "string"
        if not type_ok(kind, value):
            raise BadRequest(f"tool '{self.name}': parameter '{declared.name}' must be of type {kind}")
        value = _normalise(kind, value)
        if not fits_lua(value):
            raise BadRequest(f"tool '{self.name}': parameter '{declared.name}' holds an integer outside Lua's "
                             f"range ({LUA_INT_MIN} to {LUA_INT_MAX})")
        return value

    def call(self, arguments: dict[str, Any] | None, context: ScriptContext | None = None, *,
             deadline: float | None = None) -> Any:
        """Validate ``arguments`` and run ``tool.execute(params, context)``; JSON-like result.
        ``deadline`` (monotonic): the call's timeout counted from earlier (see ``LuaScript``)."""
        params = self.validate(arguments)
        return self.script.call_function("tool.execute", params, CONTEXT, context=context, deadline=deadline)

    def parse_cli_params(self, pairs: list[str]) -> dict[str, Any]:
        """``["k=v", ...]`` (``ctx tool test --param k=v``) -> arguments typed by the parameters."""
        types = {p.name: p.type for p in self.parameters}
        out: dict[str, Any] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep:
                raise BadRequest(f"--param {pair!r}: use NAME=VALUE")
            out[key] = coerce_text(raw, types.get(key, "string"), key)
        return out

    def describe(self) -> dict[str, Any]:
        """The ``GET /tools/list`` entry."""
        return {"name": self.name, "description": self.description, "builtin": False,
                "parameters": self.input_schema}


def coerce_text(raw: str, kind: str, name: str) -> Any:
    """A command-line string -> a value of the declared parameter type."""
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw) if any(c in raw for c in ".eE") else int(raw)
        if kind == "boolean":
            lowered = raw.strip().lower()
            if lowered in ("true", "1", "yes"):
                return True
            if lowered in ("false", "0", "no"):
                return False
            raise ValueError(raw)
        if kind in ("array", "object"):
            return decode_json(raw, f"--param {name}")
    except ValueError:
        raise BadRequest(f"--param {name}: {raw!r} is not a valid {kind}") from None
    return raw
