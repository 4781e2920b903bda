"""``WriteBack``: the Harness's note calls on writable filesystem sources (``writable = true``):
``note_write``, ``note_edit``, ``note_move``, ``note_delete``, ``note_restore``. Each does its file work under the
writer lock (``notes/``: safe paths, atomic replace, trash), then syncs the path so the note is
searchable at once, and logs one INFO line."""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_harness.config import Config
from context_harness.connectors.base import ScanReport, Writable, WriteSettings, write_settings
from context_harness.connectors.names import escape_name, unescape_name
from context_harness.errors import BadRequest, Conflict, NotConfigured, NotFound
from context_harness.models import (
    NoteDeleteRequest,
    NoteEditRequest,
    NoteMoveRequest,
    NoteResult,
    NoteWriteRequest,
    TrashEntryOut,
)
from context_harness.notes import edits, files, trash
from context_harness.notes.paths import resolve
from context_harness.store.records import document_id

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from context_harness.connectors.base import Connector
    from context_harness.models import DocumentOut, SyncSummary

log = logging.getLogger(__name__)
CLIENT: ContextVar[str] = ContextVar("note_client", default="unknown")
"""The calling client's name for the write log line (a rim sets it; ``unknown`` otherwise)."""


class WriteBack:
    """Mixed into ``Harness`` (which provides what the ``TYPE_CHECKING`` block declares)."""

    if TYPE_CHECKING:
        config: Config
        connectors: list[Connector]

        def writing(self, operation: str) -> AbstractAsyncContextManager[None]: ...

        async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

        async def sync_paths(self, label: str, rel_paths: list[str]) -> SyncSummary: ...

        async def get(self, request: Any) -> DocumentOut: ...

    def writable_sources(self) -> list[str]:
        return [c.label for c in self.connectors if write_settings(c) is not None]

    def _writable(self, source: str) -> tuple[Writable, WriteSettings]:
        connector = next((c for c in self.connectors if c.label == source or c.label == f"filesystem:{source}"), None)
        if connector is None:
            known = ", ".join(self.writable_sources()) or "none"
            raise BadRequest(f"unknown source {source!r}; writable sources: {known}")
        settings = write_settings(connector)
        if settings is None or not isinstance(connector, Writable):
            raise NotConfigured(f"source {connector.label!r} is read-only; set writable = true in its "
                                "[connectors.filesystem.NAME] section to let the note tools write there (only "
                                "folder sources can be written)")
        if not settings.root.is_dir():
            where = ("this replica does not hold it: send note tools to the replica that watches the folder"
                     if self.config.db.backend == "postgres" else "create it, or fix root in the config")
            raise NotConfigured(f"the folder of source {connector.label!r} ({settings.root}) is missing; {where}")
        return connector, settings

    async def note_write(self, request: NoteWriteRequest) -> NoteResult:
        connector, settings = self._writable(request.source)
        target = resolve(settings.root, request.path, settings.write_globs)
        rel = _rel(settings, target)
        text = _new_note(request.content, request.title, request.tags, settings.front_matter)

        async with self.writing(f"note_write {rel}"):
            await self.run_blocking(files.write, settings.root, rel, text, overwrite=request.overwrite)
        return await self._done("note_write", connector, rel, "written")

    async def note_edit(self, request: NoteEditRequest) -> NoteResult:
        connector, settings, rel = await self._document(request.id)
        resolve(settings.root, rel, settings.write_globs, naming=False)

        def edit() -> None:
            self._check_version(connector, rel, request.expected_version)
            files.edit(settings.root, rel, lambda text: _apply(text, request))

        async with self.writing(f"note_edit {rel}"):
            await self.run_blocking(edit)
        return await self._done("note_edit", connector, rel, "edited")

    async def note_move(self, request: NoteMoveRequest) -> NoteResult:
        connector, settings, rel = await self._document(request.id)
        resolve(settings.root, rel, settings.write_globs, naming=False)
        new_rel = _rel(settings, resolve(settings.root, request.to, settings.write_globs))

        def move() -> None:
            self._check_version(connector, rel, request.expected_version)
            files.move(settings.root, rel, new_rel)

        async with self.writing(f"note_move {rel} -> {new_rel}"):
            await self.run_blocking(move)
        await self.sync_paths(connector.label, [rel])
        return await self._done("note_move", connector, new_rel, "moved")

    async def note_delete(self, request: NoteDeleteRequest) -> NoteResult:
        connector, settings, rel = await self._document(request.id)
        resolve(settings.root, rel, settings.write_globs, naming=False)

        def delete() -> trash.TrashEntry:
            version = self._check_version(connector, rel, request.expected_version)
            return files.delete(settings.root, rel, self._trash_dir(), connector.label, version)

        async with self.writing(f"note_delete {rel}"):
            entry = await self.run_blocking(delete)
        result = await self._done("note_delete", connector, rel, "deleted")
        return result.model_copy(update={"trash_id": entry.id})

    async def note_restore(self, entry_id: str | None = None, path: str | None = None) -> NoteResult:
        """Put a deleted note back: the trash entry ``entry_id``, or the latest one for ``path``."""
        entry = trash.find(self._trash_dir(), entry_id, path)
        connector, settings = self._writable(entry.source)
        rel = _rel(settings, resolve(settings.root, entry.path, settings.write_globs))

        async with self.writing(f"note_restore {rel}"):
            await self.run_blocking(files.restore, settings.root, self._trash_dir(), entry, rel)
        return await self._done("note_restore", connector, rel, "restored")

    def trash_entries(self) -> list[TrashEntryOut]:
        """The deleted notes that can be restored, newest first."""
        return [TrashEntryOut(**asdict(e)) for e in trash.entries(self._trash_dir())]

    def _trash_dir(self) -> Path:
        return self.config.db.path.parent

    async def _document(self, doc_id: str) -> tuple[Writable, WriteSettings, str]:
        doc = await self.get(doc_id)
        connector, settings = self._writable(doc.source)
        return connector, settings, unescape_name(doc.source_id)

    def _check_version(self, connector: Writable, rel: str, expected: str | None) -> str | None:
        """The version of the file on disk now (hashed as a sync hashes it); ``Conflict`` when it is
        not ``expected``."""
        scan = connector.scan_paths([rel], ScanReport())
        items = [c.load() for c in scan.candidates]
        current = items[0].version() if items and items[0] is not None else None
        if expected is not None and current != expected:
            raise Conflict(f"{rel} changed since you read it: expected version {expected}, it is now {current}; "
                           "read it again with get and redo the change")
        return current

    async def _done(self, tool: str, connector: Writable, rel: str, action: str) -> NoteResult:
        await self.sync_paths(connector.label, [rel])
        log.info("%s source=%s path=%s client=%s", tool, connector.label, rel, CLIENT.get())
        doc_id = document_id(connector.label, escape_name(rel))
        if action == "deleted":
            return NoteResult(id=doc_id, source=connector.label, path=rel, version=None, action="deleted")
        try:
            version = (await self.get(doc_id)).version
        except NotFound:  # written, but not indexed: the globs, a .gitignore, or what the file holds
            reason = await self.run_blocking(connector.unindexed_reason, rel)
            return NoteResult(id=doc_id, source=connector.label, path=rel, version=None, action=action,  # type: ignore[arg-type]
                              note=f"{rel} is saved but not indexed: {reason}")
        return NoteResult(id=doc_id, source=connector.label, path=rel, version=version, action=action)  # type: ignore[arg-type]


def _new_note(content: str, title: str | None, tags: list[str] | None, front_matter: bool) -> str:
    head = ""
    if front_matter and (title or tags):
        lines = ["---"] + ([f"title: {title!r}"] if title else []) + ([f"tags: {list(tags)!r}"] if tags else [])
        head = "\n".join([*lines, "---", ""]) + ("\n" if not title else f"\n# {title}\n\n")
    else:
        head = (f"# {title}\n\n" if title else "") + (f"Tags: {', '.join(tags)}\n\n" if tags else "")
    return head + content + ("" if content.endswith("\n") else "\n")


def _apply(text: str, request: NoteEditRequest) -> str:
    if request.op == "append":
        return edits.append(text, request.text or "")
    if request.op == "prepend":
        return edits.prepend(text, request.text or "")
    if request.op == "replace_section":
        if not request.heading:
            raise BadRequest("replace_section needs heading: the heading text, or a path 'Parent > Child'")
        return edits.replace_section(text, request.heading, request.text or "")
    if request.find is None or request.replace is None:
        raise BadRequest("find_replace needs find and replace (and count, when more than one is expected)")
    return edits.find_replace(text, request.find, request.replace, request.count)


def _rel(settings: WriteSettings, target: Path) -> str:
    """``target``'s path in the source, as the connector names it."""
    return target.relative_to(settings.root).as_posix()


__all__ = ["CLIENT", "WriteBack"]
