"""``WriteBack``: the Harness's note calls on writable filesystem sources (``writable = true``):
``note_write``, ``note_edit``, ``note_delete``, ``note_restore``. Each does its file work under the
writer lock (``notes/``: safe paths, atomic replace, trash), then syncs the path so the note is
searchable at once, and logs one INFO line."""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from context_harness.config import Config, FilesystemConnectorConfig
from context_harness.connectors.base import ScanReport
from context_harness.connectors.names import escape_name, unescape_name
from context_harness.errors import BadRequest, Conflict, NotConfigured
from context_harness.ingest.sync import item_hash
from context_harness.notes import edits, trash
from context_harness.notes.atomic import Text, encode, read_text, write_atomic
from context_harness.notes.paths import resolve
from context_harness.store.documents import document_id

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from context_harness.connectors.base import Connector
    from context_harness.models import DocumentOut, SyncSummary

log = logging.getLogger(__name__)
CLIENT: ContextVar[str] = ContextVar("note_client", default="unknown")
"""The calling client's name for the write log line (a rim sets it; ``unknown`` otherwise)."""
OPS = ("append", "prepend", "replace_section", "find_replace")


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
        return [c.label for c in self.connectors if _settings(c) is not None and _settings(c).writable]  # type: ignore[union-attr]

    def _writable(self, source: str) -> tuple[Connector, FilesystemConnectorConfig]:
        connector = next((c for c in self.connectors if c.label == source or c.label == f"filesystem:{source}"), None)
        if connector is None:
            known = ", ".join(self.writable_sources()) or "none"
            raise BadRequest(f"unknown source {source!r}; writable sources: {known}")
        settings = _settings(connector)
        if settings is None or not settings.writable:
            raise NotConfigured(f"source {connector.label!r} is read-only; set writable = true in its "
                                "[connectors.filesystem.NAME] section to let the note tools write there")
        return connector, settings

    async def note_write(self, source: str, path: str, content: str, title: str | None = None,
                         tags: list[str] | None = None, overwrite: bool = False) -> dict[str, Any]:
        connector, settings = self._writable(source)
        target = resolve(settings.root, path, settings.write_globs)
        text = _new_note(content, title, tags, settings.front_matter)
        async with self.writing(f"note_write {path}"):
            await self.run_blocking(write_atomic, target, encode(Text(text)), overwrite=overwrite)
        return await self._done("note_write", connector, path, "written")

    async def note_edit(self, doc_id: str, op: str, expected_version: str, **args: Any) -> dict[str, Any]:
        connector, settings, rel = await self._document(doc_id)
        if op not in OPS:
            raise BadRequest(f"unknown op {op!r}; choose one of: {', '.join(OPS)}")
        target = resolve(settings.root, rel, settings.write_globs)

        def edit() -> None:
            self._check_version(connector, rel, expected_version)
            note = read_text(target)
            write_atomic(target, encode(Text(_apply(note.text, op, args), note.crlf, note.bom)))

        async with self.writing(f"note_edit {rel}"):
            await self.run_blocking(edit)
        return await self._done("note_edit", connector, rel, "edited")

    async def note_delete(self, doc_id: str, expected_version: str | None = None) -> dict[str, Any]:
        connector, settings, rel = await self._document(doc_id)
        target = resolve(settings.root, rel, settings.write_globs)

        def delete() -> None:
            version = self._check_version(connector, rel, expected_version)
            trash.move_to_trash(self.config.db.path.parent, target, connector.label, rel, version)

        async with self.writing(f"note_delete {rel}"):
            await self.run_blocking(delete)
        return await self._done("note_delete", connector, rel, "deleted")

    async def note_restore(self, entry_id: str | None = None, path: str | None = None) -> dict[str, Any]:
        data = self.config.db.path.parent
        entry = trash.find(data, entry_id, path)
        connector, settings = self._writable(entry.source)
        target = resolve(settings.root, entry.path, settings.write_globs)
        async with self.writing(f"note_restore {entry.path}"):
            await self.run_blocking(trash.restore, data, entry, target)
        return await self._done("note_restore", connector, entry.path, "restored")

    async def _document(self, doc_id: str) -> tuple[Connector, FilesystemConnectorConfig, str]:
        doc = await self.get(doc_id)
        connector, settings = self._writable(doc.source)
        return connector, settings, unescape_name(doc.source_id)

    def _check_version(self, connector: Connector, rel: str, expected: str | None) -> str | None:
        """The version of the file on disk now (hashed as a sync hashes it); ``Conflict`` when it is
        not ``expected``."""
        scan = connector.scan_paths([rel], ScanReport())  # type: ignore[attr-defined]
        items = [c.load() for c in scan.candidates]
        current = item_hash(items[0]) if items and items[0] is not None else None
        if expected is not None and current != expected:
            raise Conflict(f"{rel} changed since you read it: expected version {expected}, it is now {current}; "
                           "read it again with get and redo the change")
        return current

    async def _done(self, tool: str, connector: Connector, rel: str, action: str) -> dict[str, Any]:
        await self.sync_paths(connector.label, [rel])
        log.info("%s source=%s path=%s client=%s", tool, connector.label, rel, CLIENT.get())
        doc_id = document_id(connector.label, escape_name(rel))
        version = None
        if action != "deleted":
            version = (await self.get(doc_id)).version
        return {"id": doc_id, "source": connector.label, "path": rel, "version": version, "action": action}


def _settings(connector: Connector) -> FilesystemConnectorConfig | None:
    settings = getattr(connector, "config", None)
    return settings if isinstance(settings, FilesystemConnectorConfig) else None


def _new_note(content: str, title: str | None, tags: list[str] | None, front_matter: bool) -> str:
    head = ""
    if front_matter and (title or tags):
        lines = ["---"] + ([f"title: {title!r}"] if title else []) + ([f"tags: {list(tags)!r}"] if tags else [])
        head = "\n".join([*lines, "---", ""]) + ("\n" if not title else f"\n# {title}\n\n")
    else:
        head = (f"# {title}\n\n" if title else "") + (f"Tags: {', '.join(tags)}\n\n" if tags else "")
    return head + content + ("" if content.endswith("\n") else "\n")


def _apply(text: str, op: str, args: dict[str, Any]) -> str:
    if op == "append":
        return edits.append(text, str(args.get("text") or ""))
    if op == "prepend":
        return edits.prepend(text, str(args.get("text") or ""))
    if op == "replace_section":
        return edits.replace_section(text, str(args.get("heading") or ""), str(args.get("text") or ""))
    return edits.find_replace(text, str(args.get("find") or ""), str(args.get("replace") or ""),
                              int(args.get("count") or 1))


__all__ = ["CLIENT", "WriteBack"]
