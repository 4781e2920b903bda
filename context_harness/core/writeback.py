"""``WriteBack``: the Harness's note calls on writable filesystem sources (``writable = true``):
``note_write``, ``note_edit``, ``note_move``, ``note_delete``, ``note_restore``. Each does its file work under the
writer lock (``notes/``: safe paths, atomic replace, trash), then syncs the path so the note is
searchable at once, and logs one INFO line."""

from __future__ import annotations

import json
import logging
import os
import unicodedata
from contextvars import ContextVar
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_harness.config import Config
from context_harness.connectors.base import ScanReport, Writable, WriteSettings, write_settings
from context_harness.connectors.filesystem import FilesystemConnector
from context_harness.connectors.names import escape_name, unescape_name
from context_harness.errors import BadRequest, ConfigError, Conflict, NotConfigured, NotFound
from context_harness.formats.markdown import tags_line
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
from context_harness.notes.roots import Root, Roots
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

    @property
    def _roots(self) -> Roots:
        """The writable sources' root folders, held open until ``close`` (``notes.roots``)."""
        roots = self.__dict__.get("_held_roots")
        return roots if roots is not None else self.__dict__.setdefault("_held_roots", Roots())

    def _release_roots(self) -> None:
        self._roots.close()

    def _hold_roots(self) -> None:
        """Open the root of every writable source that exists now, to be walked from for the life of
        the source (``notes.roots``); a root that appears later is held when first used."""
        for connector in self.connectors:
            settings = write_settings(connector)
            if settings is not None and settings.root.is_dir():
                try:
                    self._roots.hold(settings.root, connector.label)
                except OSError as exc:  # swapped at this very moment: refused at its first use
                    log.warning("could not hold the folder of source %s (%s): %s", connector.label, settings.root, exc)
            if isinstance(connector, FilesystemConnector):  # its syncs walk from the same folder (connectors.held)
                held = None if settings is None else partial(self._roots.hold, settings.root, connector.label)
                connector.hold_root(held)

    def _writable(self, source: str) -> tuple[Writable, WriteSettings, Root]:
        connector = next((c for c in self.connectors if c.label == source or c.label == f"filesystem:{source}"), None)
        if connector is None:
            known = ", ".join(self.writable_sources()) or "none"
            raise BadRequest(f"unknown source {source!r}; writable sources: {known}")
        settings = write_settings(connector)
        if settings is None or not isinstance(connector, Writable):
            raise NotConfigured(f"source {connector.label!r} is read-only; set writable = true in its "
                                "[connectors.filesystem.NAME] section to let the note tools write there (only "
                                "folder sources can be written)")
        if self._roots.held(settings.root) is None and not settings.root.is_dir():
            where = ("this replica does not hold it: send note tools to the replica that watches the folder"
                     if self.config.db.backend == "postgres" else "create it, or fix root in the config")
            raise NotConfigured(f"the folder of source {connector.label!r} ({settings.root}) is missing; {where}")
        try:
            root = self._roots.hold(settings.root, connector.label)
        except OSError:
            raise Conflict(f"the folder of source {connector.label!r} ({settings.root}) changed while it was being "
                           "opened (a symlink or no folder in its place); put the folder back and retry") from None
        root.check()
        return connector, settings, root

    def _place(self, root: Root, rel: str, write_globs: list[str] | None, *, naming: bool = True) -> str:
        """``rel`` checked (``notes.paths.resolve``) and kept off what the config loads; as the source names it."""
        rel = resolve(root, rel, write_globs, naming=naming).relative_to(root.path).as_posix()
        target = root.real / rel
        for path, folder, what in loaded_by(self.config):
            if target == path or (folder and target.is_relative_to(path)):
                raise BadRequest(f"{rel} is {'in ' if folder else ''}{what} ({path}): note tools never write, move or "
                                "delete what the config loads (a note there would change this server's own agents, "
                                "skills or scripts); keep notes elsewhere, or change that file yourself")
        return rel

    async def note_write(self, request: NoteWriteRequest) -> NoteResult:
        connector, settings, root = self._writable(request.source)
        rel = self._place(root, request.path, settings.write_globs)
        text = _new_note(request.content, request.title, request.tags, settings.front_matter)

        async with self.writing(f"note_write {rel}"):
            await self.run_blocking(files.write, root, rel, text, overwrite=request.overwrite)
        return await self._done("note_write", connector, root, rel, "written")

    async def note_edit(self, request: NoteEditRequest) -> NoteResult:
        connector, settings, root, rel = await self._document(request.id)
        self._place(root, rel, settings.write_globs, naming=False)

        def edit() -> None:
            self._check_version(connector, root, rel, request.expected_version)
            files.edit(root, rel, lambda text: _apply(text, request))

        async with self.writing(f"note_edit {rel}"):
            await self.run_blocking(edit)
        return await self._done("note_edit", connector, root, rel, "edited")

    async def note_move(self, request: NoteMoveRequest) -> NoteResult:
        connector, settings, root, rel = await self._document(request.id)
        self._place(root, rel, settings.write_globs, naming=False)
        new_rel = self._place(root, request.to, settings.write_globs)

        def move() -> None:
            self._check_version(connector, root, rel, request.expected_version)
            files.move(root, rel, new_rel)

        async with self.writing(f"note_move {rel} -> {new_rel}"):
            await self.run_blocking(move)
        await self._synced(connector, root, rel)
        return await self._done("note_move", connector, root, new_rel, "moved")

    async def note_delete(self, request: NoteDeleteRequest) -> NoteResult:
        connector, settings, root, rel = await self._document(request.id)
        self._place(root, rel, settings.write_globs, naming=False)

        def delete() -> trash.TrashEntry:
            version = self._check_version(connector, root, rel, request.expected_version)
            return files.delete(root, rel, self._trash_dir(), connector.label, version)

        async with self.writing(f"note_delete {rel}"):
            entry = await self.run_blocking(delete)
        result = await self._done("note_delete", connector, root, rel, "deleted")
        return result.model_copy(update={"trash_id": entry.id})

    async def note_restore(self, entry_id: str | None = None, path: str | None = None) -> NoteResult:
        """Put a deleted note back: the trash entry ``entry_id``, or the latest one for ``path``."""
        entry = trash.find(self._trash_dir(), entry_id, path)
        connector, settings, root = self._writable(entry.source)
        rel = self._place(root, entry.path, settings.write_globs)

        async with self.writing(f"note_restore {rel}"):
            await self.run_blocking(files.restore, root, self._trash_dir(), entry, rel)
        return await self._done("note_restore", connector, root, rel, "restored")

    def trash_entries(self) -> list[TrashEntryOut]:
        """The deleted notes that can be restored, newest first."""
        return [TrashEntryOut(**asdict(e)) for e in trash.entries(self._trash_dir())]

    def _trash_dir(self) -> Path:
        return self.config.db.path.parent

    async def _document(self, doc_id: str) -> tuple[Writable, WriteSettings, Root, str]:
        doc = await self.get(doc_id)
        connector, settings, root = self._writable(doc.source)
        return connector, settings, root, unescape_name(doc.source_id)

    def _check_version(self, connector: Writable, root: Root, rel: str, expected: str | None) -> str | None:
        """The version of the file on disk now (hashed as a sync hashes it); ``Conflict`` when it is
        not ``expected``."""
        try:
            scan = connector.scan_paths([rel], ScanReport())
        except FileNotFoundError:  # the root went meanwhile
            root.check()
            raise Conflict(f"the folder of {rel} could not be read just now; nothing was changed, retry") from None
        items = [c.load() for c in scan.candidates]
        current = items[0].version() if items and items[0] is not None else None
        if expected is not None and current != expected:
            raise Conflict(f"{rel} changed since you read it: expected version {expected}, it is now {current}; "
                           "read it again with get and redo the change")
        return current

    async def _synced(self, connector: Writable, root: Root, rel: str) -> bool:
        """Sync ``rel`` while the root is the folder held (the connector walks from it too); False
        when its folder was missing for a moment. A root swapped meanwhile is named as such."""
        root.check()
        try:
            await self.sync_paths(connector.label, [rel])
        except NotConfigured:
            root.check()
            return False
        return True

    async def _done(self, tool: str, connector: Writable, root: Root, rel: str, action: str) -> NoteResult:
        synced = await self._synced(connector, root, rel)
        log.info("%s source=%s path=%s client=%s", tool, connector.label, rel, CLIENT.get())
        doc_id = document_id(connector.label, escape_name(rel))
        if action == "deleted":
            return NoteResult(id=doc_id, source=connector.label, path=rel, version=None, action="deleted")
        try:
            version = (await self.get(doc_id)).version
        except NotFound:  # written, but not indexed: the globs, a .gitignore, or what the file holds
            try:
                reason = await self.run_blocking(connector.unindexed_reason, rel) if synced else ""
            except FileNotFoundError:  # the root went meanwhile
                root.check()
                synced = False
            reason = reason if synced else "its folder could not be read just now; sync the source again"
            return NoteResult(id=doc_id, source=connector.label, path=rel, version=None, action=action,  # type: ignore[arg-type]
                              note=f"{rel} is saved but not indexed: {reason}")
        return NoteResult(id=doc_id, source=connector.label, path=rel, version=version, action=action)  # type: ignore[arg-type]


def loaded_by(config: Config) -> list[tuple[Path, bool, str]]:
    """What ``config`` loads, resolved: (path, is a folder, what it is) of the config file, the folders of
    Markdown agents and of skills, and every Lua script."""
    out: list[tuple[Path, bool, str]] = []
    if config.source_path is not None:
        out.append((config.source_path, False, "the config file"))
    from context_harness.agents.settings import load_settings

    try:
        agents = load_settings(config)
    except ConfigError:  # the catalog says so; what is read from the file is still kept off
        agents = None
    if agents is not None:
        out += [(p, True, "a folder [agents] paths loads agents from") for p in agents.agent_paths]
        out += [(p, True, "a folder [agents] skill_paths loads skills from") for p in agents.skill_paths]
        out += [(s.path, False, f"the Lua script of [agents.script.{n}]") for n, s in agents.scripts]
    out += [(s.path, False, f"the Lua script of [tools.script.{n}]") for n, s in config.tools.script.items()]
    out += [(s.path, False, f"the Lua script of [connectors.script.{n}]") for n, s in config.connectors.script.items()]
    return [(Path(os.path.realpath(path)), folder, what) for path, folder, what in out]


def _new_note(content: str, title: str | None, tags: list[str] | None, front_matter: bool) -> str:
    """The note's text: front matter (``front_matter``) or a ``# Title`` line and a ``Tags: a, b`` line
    of the one shape the Markdown reader takes as the document's tags (``formats.markdown.tags_line``),
    so the tags are searchable with the ``tags`` filter at once and after a re-sync from the files."""
    title = " ".join(title.split()) if title else None  # one line: a line break would end the heading
    tags = _tags(tags or [])
    head = ""
    if front_matter and (title or tags):
        lines = ["---"] + ([f"title: {json.dumps(title, ensure_ascii=False)}"] if title else [])
        lines += [f"tags: {json.dumps(tags, ensure_ascii=False)}"] if tags else []
        head = "\n".join([*lines, "---", ""]) + ("\n" if not title else f"\n# {title}\n\n")
    else:
        head = (f"# {title}\n\n" if title else "") + (f"Tags: {', '.join(tags)}\n\n" if tags else "")
    return head + content + ("" if content.endswith("\n") else "\n")


def _tags(tags: list[str]) -> list[str]:
    """Each tag on one line, without a comma (the ``Tags:`` line separates by commas) or a control
    character, once."""
    out: dict[str, None] = {}
    for tag in tags:
        if "," in tag:
            raise BadRequest(f"tag {tag!r} holds a comma; give each tag as its own item of tags")
        one = " ".join(tag.split()).lstrip("#").strip()
        if any(unicodedata.category(c) == "Cc" for c in one):
            raise BadRequest(f"tag {tag!r} holds a control character; give tags as plain words")
        if one:
            out.setdefault(one, None)
    return list(out)


def _head_end(text: str) -> int:
    """Where the note's own text starts: after its front matter, and after the title and ``Tags:`` lines
    ``note_write`` wrote (prepend and replace_section keep the tags where the reader finds them)."""
    at = edits.front_matter_end(text)
    return at + tags_line(text[at:])[1]


def _apply(text: str, request: NoteEditRequest) -> str:
    if request.op == "append":
        return edits.append(text, request.text or "")
    if request.op == "prepend":
        return edits.prepend(text, request.text or "", _head_end(text))
    if request.op == "replace_section":
        if not request.heading:
            raise BadRequest("replace_section needs heading: the heading text, or a path 'Parent > Child'")
        return edits.replace_section(text, request.heading, request.text or "", _head_end(text))
    if request.find is None or request.replace is None:
        raise BadRequest("find_replace needs find and replace (and count, when more than one is expected)")
    return edits.find_replace(text, request.find, request.replace, request.count)


__all__ = ["CLIENT", "WriteBack"]
