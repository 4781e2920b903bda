"""The console's tools pages: every tool this server offers (built-in, agent, extension and Lua tools,
as ``tools/list`` shows them), and a form generated from a tool's input schema that calls it.

A call goes through ``Harness.call_tool`` with the server's agent scope, the path ``POST /tools/{name}``
takes, so validation and error messages are the API's. The form only turns each control's text into
a JSON value of the property's type; text that is not one (a word in a number field) is passed on
as it is, and the tool's own validation names the problem, as it would for the same JSON body.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from context_harness.common.validation import decode_json
from context_harness.console.pages import Pages, error_message
from context_harness.core.face import Tool
from context_harness.errors import HarnessError


@dataclass
class Control:
    """One form control for one schema property. ``kind``: text, number, checkbox, select, lines
    (an array of strings, one per line) or json (anything else, as JSON text)."""

    name: str
    kind: str
    required: bool = False
    description: str = ""
    options: list[Any] = field(default_factory=list)  # a select's values, as the schema gives them
    integer: bool = False
    minimum: Any = None
    maximum: Any = None
    default: str = ""  # the schema's default, as the control shows it

    def value(self, raw: str, given: bool) -> tuple[bool, Any]:
        """``(present, value)``: the JSON argument for the control's text (``given``: a checkbox's state)."""
        if self.kind == "checkbox":
            return True, given
        if raw.strip() == "":
            return False, None
        if self.kind == "number":
            return True, _number(raw.strip(), self.integer)
        if self.kind == "select":
            return True, next((o for o in self.options if _shown(o) == raw), raw)
        if self.kind == "lines":
            return True, [line.strip() for line in raw.splitlines() if line.strip()]
        if self.kind == "json":
            return True, decode_json(raw.encode(), f"argument {self.name!r}")
        return True, raw


def controls(schema: dict[str, Any]) -> list[Control]:
    """The form of an input schema: one control per property, in the schema's order."""
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    return [control(name, prop if isinstance(prop, dict) else {}, name in required)
            for name, prop in properties.items()]


def control(name: str, prop: dict[str, Any], required: bool) -> Control:
    """The control for property ``name`` (see the contract in docs/how-to/web-console.md)."""
    kind = _type(prop)
    enum = [v for v in prop.get("enum", []) if v is not None]
    out = Control(name, "json", required, str(prop.get("description", "")))
    if "default" in prop and prop["default"] is not None:
        out.default = _shown(prop["default"]) if kind != "array" else "\n".join(map(str, prop["default"]))
    if enum:
        out.kind, out.options = "select", enum
    elif kind == "string":
        out.kind = "text"
    elif kind in ("integer", "number"):
        out.kind, out.integer = "number", kind == "integer"
        out.minimum, out.maximum = prop.get("minimum"), prop.get("maximum")
    elif kind == "boolean":
        out.kind = "checkbox"
    elif kind == "array" and _type(prop.get("items") or {}) == "string":
        out.kind = "lines"
    return out


def origin(tool: Tool, base: Path, origins: dict[str, str]) -> str:
    """Where a tool comes from: built-in, a Lua script (relative to the config's folder, and the
    registry it was installed from when known), or an extension."""
    if tool.builtin:
        return "built-in"
    path = getattr(tool, "path", None)
    if path is None:
        return "extension"
    shown = Path(path)
    try:
        shown = shown.resolve().relative_to(base.resolve())
    except (ValueError, OSError):
        pass
    registry = origins.get(f"tools/{tool.name}")
    return f"Lua: {shown.as_posix()}" + (f" (from {registry})" if registry else "")


class ToolPages:
    """``/ui/tools`` and ``/ui/tools/{name}``; ``agent``: the agent the server is scoped to, if any."""

    def __init__(self, pages: Pages, agent: str | None = None) -> None:
        self.pages = pages
        self.agent = agent

    def routes(self) -> list[BaseRoute]:
        return [Route("/tools", self.listing, methods=["GET"]),
                Route("/tools/{name}", self.tool, methods=["GET", "POST"])]

    async def listing(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        harness = self.pages.harness
        config = harness.config
        rows = [{"name": t.name, "description": t.description,
                 "origin": origin(t, config.base_dir, config.extension_origins)} for t in harness.tools(self.agent)]
        unavailable = harness.tool_listing(self.agent).get("unavailable", [])
        return self.pages.render(request, "tools.html", tools=rows, unavailable=unavailable)

    async def tool(self, request: Request) -> Response:
        """The tool's form; a POST (a writer's, with the CSRF token) calls it and shows the result."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        name = request.path_params["name"]
        tool = next((t for t in self.pages.harness.tools(self.agent) if t.name == name), None)
        if tool is None:
            return self.pages.render(request, "message.html", 404, title="No such tool",
                                     message=f"unknown tool {name!r}; the Tools page lists the available ones")
        fields = controls(tool.input_schema)
        context: dict[str, Any] = {"tool": tool, "fields": fields,
                                   "values": {f.name: f.default for f in fields},
                                   "checked": {f.name for f in fields if f.kind == "checkbox" and f.default == "true"}}
        if request.method == "POST":
            refused = await self.pages.refused_write(request)
            if refused is not None:
                return refused
            context.update(await self.call(name, fields, await request.form()))
        return self.pages.render(request, "tool.html", 400 if "error" in context else 200, **context)

    async def call(self, name: str, fields: list[Control], form: FormData) -> dict[str, Any]:
        """Call tool ``name`` with the form's values: the values kept for the form, and the result
        (pretty JSON) with its time, or the error."""
        values = {f.name: _text(form.get(f.name)) for f in fields}
        checked = {f.name for f in fields if f.kind == "checkbox" and f.name in form}
        out: dict[str, Any] = {"values": values, "checked": checked}
        try:
            arguments = {}
            for f in fields:
                present, value = f.value(values[f.name], f.name in checked)
                if present:
                    arguments[f.name] = value
            start = time.perf_counter()
            result = await self.pages.harness.call_tool(name, arguments, self.agent)
            out["ms"] = (time.perf_counter() - start) * 1000
            out["result"] = json.dumps(result.payload, ensure_ascii=False, indent=2)
        except HarnessError as exc:
            out["error"] = error_message(exc)
        return out


def _type(prop: dict[str, Any]) -> str:
    """A property's type; of a nullable one (``["string", "null"]``), the type that is not null."""
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else ""


def _number(text: str, integer: bool) -> Any:
    """``text`` as an int or a float; as it is when it is neither (the tool then says what it wants)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if integer and value.is_integer() else value


def _shown(value: Any) -> str:
    """How a schema value shows in a control: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


__all__ = ["Control", "ToolPages", "control", "controls", "origin"]
