"""``ctx note write|edit|move|delete|restore|trash``: the note tools from a terminal, on sources with
``writable = true`` (``--json``: the payload the MCP tools return)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.support import Group, config_option, print_json, run_with_harness
from context_harness.errors import BadRequest

if TYPE_CHECKING:
    from context_harness.models import NoteResult

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
VERSION_OPTION = click.option("--version", "expected_version", default=None,
                              help="The version `ctx get` showed; refused if the note changed since.")


@click.group(cls=Group)
def note() -> None:
    """Write, edit, move and delete notes in writable sources (and restore them from the trash)."""


@note.command("write")
@click.argument("source")
@click.argument("path")
@click.option("--text", default=None, help="The note's Markdown; without it, read from standard input.")
@click.option("--title", default=None, help="Written as a '# Title' line (or front matter).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--overwrite", is_flag=True, help="Replace an existing file.")
@JSON_OPTION
@config_option
@click.pass_context
def note_write(ctx: click.Context, source: str, path: str, text: str | None, title: str | None,
               tags: tuple[str, ...], overwrite: bool, as_json: bool, config_path: str | None,
               root: str | None) -> None:
    """Create the note PATH (ending .md) in SOURCE."""
    from context_harness.common.validation import parse
    from context_harness.models import NoteWriteRequest

    request = parse(NoteWriteRequest, {"source": source, "path": path, "content": _text(text), "title": title,
                                       "tags": list(tags) or None, "overwrite": overwrite})
    _report(run_with_harness(ctx, lambda h: h.note_write(request)), as_json)


@note.command("edit")
@click.argument("doc_id")
@click.argument("op", type=click.Choice(["append", "prepend", "replace_section", "find_replace"]))
@click.option("--version", "expected_version", required=True,
              help="The version `ctx get` showed; refused if the note changed since.")
@click.option("--text", default=None, help="append/prepend/replace_section: the text; without it, standard input.")
@click.option("--heading", default=None, help="replace_section: the heading, or a path 'Parent > Child'.")
@click.option("--find", default=None, help="find_replace: the text to find.")
@click.option("--replace", default=None, help="find_replace: its replacement.")
@click.option("--count", type=int, default=1, show_default=True, help="find_replace: occurrences expected.")
@JSON_OPTION
@config_option
@click.pass_context
def note_edit(ctx: click.Context, doc_id: str, op: str, expected_version: str, text: str | None,
              heading: str | None, find: str | None, replace: str | None, count: int, as_json: bool,
              config_path: str | None, root: str | None) -> None:
    """Change the note DOC_ID by OP."""
    if op != "find_replace":
        text = _text(text)
    from context_harness.common.validation import parse
    from context_harness.models import NoteEditRequest

    request = parse(NoteEditRequest, {"id": doc_id, "op": op, "expected_version": expected_version, "text": text,
                                      "heading": heading, "find": find, "replace": replace, "count": count})
    _report(run_with_harness(ctx, lambda h: h.note_edit(request)), as_json)


@note.command("move")
@click.argument("doc_id")
@click.argument("to")
@VERSION_OPTION
@JSON_OPTION
@config_option
@click.pass_context
def note_move(ctx: click.Context, doc_id: str, to: str, expected_version: str | None, as_json: bool,
              config_path: str | None, root: str | None) -> None:
    """Move the note DOC_ID to the path TO in the same source."""
    from context_harness.common.validation import parse
    from context_harness.models import NoteMoveRequest

    request = parse(NoteMoveRequest, {"id": doc_id, "to": to, "expected_version": expected_version})
    _report(run_with_harness(ctx, lambda h: h.note_move(request)), as_json)


@note.command("delete")
@click.argument("doc_id")
@VERSION_OPTION
@JSON_OPTION
@config_option
@click.pass_context
def note_delete(ctx: click.Context, doc_id: str, expected_version: str | None, as_json: bool,
                config_path: str | None, root: str | None) -> None:
    """Move the note DOC_ID to the workspace's trash."""
    from context_harness.common.validation import parse
    from context_harness.models import NoteDeleteRequest

    request = parse(NoteDeleteRequest, {"id": doc_id, "expected_version": expected_version})
    _report(run_with_harness(ctx, lambda h: h.note_delete(request)), as_json)


@note.command("restore")
@click.argument("trash_id", required=False)
@click.option("--path", default=None, help="Restore the latest deleted note at this path instead.")
@JSON_OPTION
@config_option
@click.pass_context
def note_restore(ctx: click.Context, trash_id: str | None, path: str | None, as_json: bool,
                 config_path: str | None, root: str | None) -> None:
    """Put a deleted note back: by TRASH_ID (see `ctx note trash`) or the latest at --path."""
    if (trash_id is None) == (path is None):
        raise BadRequest("give a trash id (see `ctx note trash`) or --path, not both")
    _report(run_with_harness(ctx, lambda h: h.note_restore(trash_id, path)), as_json)


@note.command("trash")
@JSON_OPTION
@config_option
@click.pass_context
def note_trash(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """List the deleted notes that can be restored, newest first."""

    async def entries(harness: Any) -> list[Any]:
        return harness.trash_entries()

    found = run_with_harness(ctx, entries)
    if as_json:
        print_json({"entries": [e.model_dump(mode="json") for e in found]})
        return
    if not found:
        click.echo("the trash is empty")
    for e in found:
        click.echo(f"{e.id}  {e.deleted_at}  {e.source} · {e.path}")


def _text(given: str | None) -> str:
    if given is not None:
        return given
    if sys.stdin.isatty():
        raise BadRequest("no text: pass --text, or pipe the note into standard input")
    return sys.stdin.read()


def _report(result: NoteResult, as_json: bool) -> None:
    from context_harness.core.face import render_note

    payload = result.model_dump(mode="json")
    if as_json:
        print_json(payload)
    else:
        click.echo(render_note(payload))
