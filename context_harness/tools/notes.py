"""The note tools over a ``Harness`` with writable sources: ``note_write``, ``note_edit``,
``note_move``, ``note_delete`` and ``note_restore`` (a deletion undone). Offered only when some source
has ``writable = true``; each validates its arguments and calls one Harness method (``writeback.py``)."""

from __future__ import annotations

from typing import Any, Protocol

from context_harness.common.validation import parse
from context_harness.config import Config
from context_harness.models import (
    NoteDeleteRequest,
    NoteEditRequest,
    NoteMoveRequest,
    NoteRestoreRequest,
    NoteResult,
    NoteWriteRequest,
)
from context_harness.tools.base import FunctionTool
from context_harness.tools.builtin import schema_of

WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
CHANGE = {**WRITE, "destructiveHint": True}


class NoteHost(Protocol):
    async def note_write(self, request: NoteWriteRequest) -> NoteResult: ...

    async def note_edit(self, request: NoteEditRequest) -> NoteResult: ...

    async def note_move(self, request: NoteMoveRequest) -> NoteResult: ...

    async def note_delete(self, request: NoteDeleteRequest) -> NoteResult: ...

    async def note_restore(self, entry_id: str | None = None, path: str | None = None) -> NoteResult: ...


def render_note(payload: dict[str, Any]) -> str:
    """One line: what was done to which note, and what to pass next."""
    line = f"{payload['action'].capitalize()} {payload['path']} in {payload['source']} (id: {payload['id']}"
    line += f", version: {payload['version']})" if payload.get("version") else ")"
    if payload.get("trash_id"):
        line += f"; in the trash as {payload['trash_id']} (`ctx note restore {payload['trash_id']}`)"
    if payload.get("note"):
        line += f". Note: {payload['note']}."
    return line


def note_tools(host: NoteHost, config: Config) -> list[FunctionTool]:
    """The note tools bound to ``host``; none when no filesystem source is writable."""
    if not any(c.writable for c in config.connectors.filesystem.values()):
        return []

    async def write(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await host.note_write(parse(NoteWriteRequest, arguments))).model_dump(mode="json")

    async def edit(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await host.note_edit(parse(NoteEditRequest, arguments))).model_dump(mode="json")

    async def move(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await host.note_move(parse(NoteMoveRequest, arguments))).model_dump(mode="json")

    async def delete(arguments: dict[str, Any]) -> dict[str, Any]:
        return (await host.note_delete(parse(NoteDeleteRequest, arguments))).model_dump(mode="json")

    async def restore(arguments: dict[str, Any]) -> dict[str, Any]:
        request = parse(NoteRestoreRequest, arguments)
        return (await host.note_restore(request.trash_id, request.path)).model_dump(mode="json")

    out = schema_of(NoteResult, "serialization")
    return [
        FunctionTool(name="note_write", title="Write a note", input_schema=schema_of(NoteWriteRequest),
                     output_schema=out, run=write, annotations=dict(WRITE), render=render_note,
                     description="Create a Markdown note at `path` (relative, ending .md) in a writable `source`; "
                     "refuses an existing file unless `overwrite` is true. The note is searchable at once."),
        FunctionTool(name="note_edit", title="Edit a note", input_schema=schema_of(NoteEditRequest),
                     output_schema=out, run=edit, annotations=dict(CHANGE), render=render_note,
                     description="Change a note by `id`: `append`/`prepend` `text`, `replace_section` under "
                     "`heading` with `text`, or `find_replace` (`find`, `replace`, `count`). Pass the `version` "
                     "that `get` or `search` returned as `expected_version`: a note changed since is refused "
                     "with a conflict."),
        FunctionTool(name="note_move", title="Move a note", input_schema=schema_of(NoteMoveRequest),
                     output_schema=out, run=move, annotations=dict(CHANGE), render=render_note,
                     description="Move or rename a note by `id` to `to` (a new .md path in the same source); an "
                     "existing file there is refused. Its id changes with its path: use the returned `id`."),
        FunctionTool(name="note_delete", title="Delete a note", input_schema=schema_of(NoteDeleteRequest),
                     output_schema=out, run=delete, annotations=dict(CHANGE), render=render_note,
                     description="Move a note by `id` to the workspace's trash (`ctx note restore` puts it "
                     "back); with `expected_version`, refused if it changed since."),
        FunctionTool(name="note_restore", title="Restore a deleted note", input_schema=schema_of(NoteRestoreRequest),
                     output_schema=out, run=restore, annotations=dict(WRITE), render=render_note,
                     description="Undo a note_delete: put the note back where it was, from the `trash_id` that "
                     "note_delete returned (or the latest deletion of `path`); refused when a file is there "
                     "again. The note is searchable at once."),
    ]


__all__ = ["NoteHost", "note_tools", "render_note"]
