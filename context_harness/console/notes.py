"""The console's note pages on writable sources: New note, Edit (a textarea with a preview), Move,
Delete, and the trash with Restore. Each write is one call of the core's ``Notes`` part, the same
that the note tools make (``note_write``, ``note_edit``, ``note_move``, ``note_delete``,
``note_restore``), and carries the version the page showed: a note changed on disk since is refused
by the core (``Conflict``), and the edit page then shows both versions and lets the user choose.
Nothing is ever overwritten silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.console.markdown import doc_href, render
from context_harness.console.pages import Pages, error_message
from context_harness.errors import Conflict, HarnessError, NotFound
from context_harness.models import (
    DocumentOut,
    GetRequest,
    NoteDeleteRequest,
    NoteEditRequest,
    NoteMoveRequest,
    NoteResult,
    NoteWriteRequest,
)


class NotePages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.harness = pages.harness

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/notes/new", self.new, methods=["GET", "POST"]),
            Route("/notes/edit", self.edit, methods=["GET", "POST"]),
            Route("/notes/move", self.move, methods=["POST"]),
            Route("/notes/delete", self.delete, methods=["POST"]),
            Route("/trash", self.trash, methods=["GET"]),
            Route("/trash/restore", self.restore, methods=["POST"]),
        ]

    def done(self, request: Request, result: NoteResult) -> Response:
        """On to the note's page; a note saved where the source's globs leave it out has none."""
        if result.note:
            return self.message(request, 200, "Saved, not indexed", result.note)
        return RedirectResponse(doc_href(result.id), status_code=303)

    def message(self, request: Request, status: int, title: str, message: str) -> Response:
        return self.pages.render(request, "message.html", status, title=title, message=message)

    def refused_page(self, request: Request) -> Response | None:
        """A response when this session may not see a writing page, else None."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        if not self.pages.writable():
            return self.message(request, 403, "Read-only", "No source can be written here: set writable = true in a "
                                "[connectors.filesystem.NAME] section (and leave [ui] read_only off).")
        return None

    async def whole(self, doc_id: str) -> DocumentOut:
        """The whole document as indexed (``NotFound`` when it is not; ``BadRequest`` for a bad id)."""
        return await self.harness.get(GetRequest(id=doc_id, max_chars=0))

    # -- new -------------------------------------------------------------------------------------

    async def new(self, request: Request) -> Response:
        if request.method == "GET":
            refused = self.refused_page(request)
            sources = self.harness.writable_sources()
            return refused or self.pages.render(request, "note_new.html", sources=sources,
                                                values={"source": sources[0] if sources else ""})
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        form = await request.form()
        values = {key: _text(form.get(key)) for key in ("source", "path", "title", "content")}
        try:
            result = await self.harness.note_write(NoteWriteRequest(
                source=values["source"], path=values["path"], content=_lines(values["content"]),
                title=values["title"].strip() or None))
        except (HarnessError, ValidationError) as exc:
            return self.pages.render(request, "note_new.html", 400, sources=self.harness.writable_sources(),
                                     values=values, error=error_message(exc))
        return self.done(request, result)

    # -- edit ------------------------------------------------------------------------------------

    async def edit(self, request: Request) -> Response:
        if request.method == "GET":
            refused = self.refused_page(request)
            if refused is not None:
                return refused
            try:
                doc = await self.whole(request.query_params.get("id", ""))
            except (HarnessError, ValidationError) as exc:
                return self.message(request, 404, "Not found", error_message(exc))
            if not self.pages.writable(doc.source):
                return self.message(request, 403, "Read-only source", f"{doc.source} is not writable: only notes "
                                    f"in {', '.join(self.harness.writable_sources())} can be edited here.")
            return self.edit_page(request, doc, doc.body)
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        form = await request.form()
        doc_id, version, text = _text(form.get("id")), _text(form.get("version")), _lines(_text(form.get("text")))
        try:
            doc = await self.whole(doc_id)
        except NotFound:
            return self.message(request, 409, "Deleted meanwhile", "The note was deleted or moved since you opened "
                                "it; your text is not saved. Look in the trash, or make a new note with it.")
        except (HarnessError, ValidationError) as exc:
            return self.message(request, 400, "Not saved", error_message(exc))
        if _text(form.get("do")) == "preview":
            return self.edit_page(request, doc, text, version=version, preview=True)
        try:
            result = await self.harness.note_edit(_replacement(doc, version, text))
        except Conflict:
            return await self.conflict(request, doc, text, version)
        except (HarnessError, ValidationError) as exc:
            return self.edit_page(request, doc, text, version=version, status=400, error=error_message(exc))
        return self.done(request, result)

    def edit_page(self, request: Request, doc: DocumentOut, text: str, *, version: str | None = None,
                  preview: bool = False, status: int = 200, **values: Any) -> Response:
        if doc.truncated:
            return self.message(request, 400, "Too long to edit here", f"{doc.source_id} is longer than the console "
                                "edits at once; edit the file in an editor.")
        shown = render(text, lambda kind, target: None) if preview else None
        return self.pages.render(request, "note_edit.html", status, doc=doc, text=text,
                                 version=version or doc.version or "", preview=shown, **values)

    async def conflict(self, request: Request, doc: DocumentOut, text: str, started: str) -> Response:
        """The note changed on disk: index the source again to read the version there now, and show it
        beside the user's text. Saving again replaces *that* version (the user chose to); else the
        user keeps the disk's by leaving."""
        try:
            await self.harness.sync(doc.source, embed=False)
            now = await self.whole(doc.id)
        except NotFound:
            return self.message(request, 409, "Deleted meanwhile", f"{doc.source_id} was deleted on disk while you "
                                "edited it; your text is not saved. Make a new note with it.")
        return self.pages.render(request, "note_edit.html", 409, doc=now, text=text, version=now.version or "",
                                 conflict=True, started=started, theirs=render(now.body, lambda kind, target: None))

    # -- move, delete, restore -------------------------------------------------------------------

    async def move(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        form = await request.form()
        try:
            result = await self.harness.note_move(NoteMoveRequest(
                id=_text(form.get("id")), to=_text(form.get("to")).strip(),
                expected_version=_text(form.get("version")) or None))
        except (HarnessError, ValidationError) as exc:
            return self.changed_or_refused(request, "Not moved", exc)
        return self.done(request, result)

    async def delete(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        form = await request.form()
        try:
            result = await self.harness.note_delete(NoteDeleteRequest(
                id=_text(form.get("id")), expected_version=_text(form.get("version")) or None))
        except (HarnessError, ValidationError) as exc:
            return self.changed_or_refused(request, "Not deleted", exc)
        return RedirectResponse(f"/ui/trash?done={_quote(f'deleted {result.path}')}", status_code=303)

    def changed_or_refused(self, request: Request, title: str, exc: Exception) -> Response:
        if isinstance(exc, Conflict):
            return self.message(request, 409, f"{title}: changed on disk", f"{error_message(exc)}. Nothing was "
                                "changed: open the note again to see its version now.")
        return self.message(request, 400, title, error_message(exc))

    async def trash(self, request: Request) -> Response:
        refused = self.refused_page(request)
        return refused or self.pages.render(request, "trash.html", entries=self.harness.trash_entries(),
                                            done=request.query_params.get("done", ""))

    async def restore(self, request: Request) -> Response:
        refused = await self.pages.refused_write(request)
        if refused is not None:
            return refused
        try:
            result = await self.harness.note_restore(_text((await request.form()).get("trash_id")) or None)
        except HarnessError as exc:
            return self.message(request, 400, "Not restored", error_message(exc))
        return self.done(request, result)


def _replacement(doc: DocumentOut, version: str, text: str) -> NoteEditRequest:
    """The edit that makes the note's body ``text``: the body as read replaced whole (front matter
    kept), checked against ``version``, the version the user started from."""
    if not doc.body:
        return NoteEditRequest(id=doc.id, op="append", expected_version=version, text=text)
    return NoteEditRequest(id=doc.id, op="find_replace", expected_version=version, find=doc.body, replace=text)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _lines(text: str) -> str:
    """A textarea's text with the browser's CRLF line breaks back to the files' LF."""
    return text.replace("\r\n", "\n")


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="/")


__all__ = ["NotePages"]
