"""The note tools over a ``Harness`` with writable sources: ``note_write``, ``note_edit`` and
``note_delete``. Offered only when some source has ``writable = true``;
each validates its arguments and calls one Harness method (``writeback.py``)."""

from __future__ import annotations

from typing import Any, Protocol

from context_harness.config import Config
from context_harness.errors import BadRequest
from context_harness.tools.base import FunctionTool

WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
CHANGE = {**WRITE, "destructiveHint": True}
_STR = {"type": "string"}


class NoteHost(Protocol):
    async def note_write(self, source: str, path: str, content: str, title: str | None = None,
                         tags: list[str] | None = None, overwrite: bool = False) -> dict[str, Any]: ...

    async def note_edit(self, doc_id: str, op: str, expected_version: str, **args: Any) -> dict[str, Any]: ...

    async def note_delete(self, doc_id: str, expected_version: str | None = None) -> dict[str, Any]: ...


def _schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _args(arguments: Any, schema: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments, dict):
        raise BadRequest("arguments must be a JSON object")
    unknown = set(arguments) - set(schema["properties"])
    missing = [k for k in schema["required"] if arguments.get(k) in (None, "")]
    if unknown or missing:
        raise BadRequest(f"unknown arguments {sorted(unknown)}" if unknown else f"missing argument {missing[0]!r}")
    return arguments


WRITE_SCHEMA = _schema(["source", "path", "content"], source=_STR, path=_STR, content=_STR, title=_STR,
                       tags={"type": "array", "items": _STR}, overwrite={"type": "boolean", "default": False})
EDIT_SCHEMA = _schema(["id", "op", "expected_version"], id=_STR,
                      op={"type": "string", "enum": ["append", "prepend", "replace_section", "find_replace"]},
                      text=_STR, heading=_STR, find=_STR, replace=_STR, count={"type": "integer", "minimum": 1},
                      expected_version=_STR)
DELETE_SCHEMA = _schema(["id"], id=_STR, expected_version=_STR)


def note_tools(host: NoteHost, config: Config) -> list[FunctionTool]:
    """The note tools bound to ``host``; none when no filesystem source is writable."""
    if not any(c.writable for c in config.connectors.filesystem.values()):
        return []

    async def write(arguments: dict[str, Any]) -> dict[str, Any]:
        a = _args(arguments, WRITE_SCHEMA)
        return await host.note_write(a["source"], a["path"], a["content"], a.get("title"), a.get("tags"),
                                     bool(a.get("overwrite", False)))

    async def edit(arguments: dict[str, Any]) -> dict[str, Any]:
        a = dict(_args(arguments, EDIT_SCHEMA))
        return await host.note_edit(a.pop("id"), a.pop("op"), a.pop("expected_version"), **a)

    async def delete(arguments: dict[str, Any]) -> dict[str, Any]:
        a = _args(arguments, DELETE_SCHEMA)
        return await host.note_delete(a["id"], a.get("expected_version"))

    return [
        FunctionTool(name="note_write", title="Write a note", input_schema=WRITE_SCHEMA, run=write,
                     annotations=dict(WRITE),
                     description="Create a Markdown note at `path` (relative, ending .md) in a writable `source`; "
                     "refuses an existing file unless `overwrite` is true. The note is searchable at once."),
        FunctionTool(name="note_edit", title="Edit a note", input_schema=EDIT_SCHEMA, run=edit,
                     annotations=dict(CHANGE),
                     description="Change a note by `id`: `append`/`prepend` `text`, `replace_section` under "
                     "`heading` with `text`, or `find_replace` (`find`, `replace`, `count`). Pass the `version` "
                     "`get` returned as `expected_version`: a note changed since is refused with a conflict."),
        FunctionTool(name="note_delete", title="Delete a note", input_schema=DELETE_SCHEMA, run=delete,
                     annotations=dict(CHANGE),
                     description="Move a note by `id` to the workspace's trash folder (it can be restored "
                     "from there); with `expected_version`, refused if it changed since."),
    ]


__all__ = ["note_tools"]
