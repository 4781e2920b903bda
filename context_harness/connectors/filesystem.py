"""The filesystem connector: Markdown and text files under a folder, and PDF, DOCX and HTML files
converted to text when the documents extra is installed (``ingest/documents.py``).

Never reads outside ``root``: symlinks whose target leaves the root are skipped and counted.
Honours ``.gitignore`` files (root and nested), always skips ``.git`` and ``node_modules``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat as stat_mod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pathspec

from context_harness import timestamps
from context_harness.config import FilesystemConnectorConfig
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.ingest import documents
from context_harness.ingest.documents import EXTRA_HINT, DocumentFormat, document_format
from context_harness.ingest.markdown import (
    first_heading,
    front_matter_tags,
    front_matter_time,
    json_safe,
    split_front_matter,
)

log = logging.getLogger(__name__)
DOCUMENT_COST = 32  # a document to convert, as work, against a text file (Candidate.cost), plus 1 per 64 kB
ALWAYS_SKIPPED_DIRS = frozenset({".git", "node_modules", ".hg", ".svn", "__pycache__", ".ctx"})
_CONTENT_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".mdx": "text/markdown",
                  ".rst": "text/x-rst", ".txt": "text/plain"}


def _spec(patterns: list[str]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", patterns)


class _Entry(Protocol):
    """What the scan's rules read of a folder entry (an ``os.DirEntry`` or a ``_PathEntry``)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> str: ...

    def is_symlink(self) -> bool: ...

    def is_dir(self, *, follow_symlinks: bool = True) -> bool: ...

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result: ...


class _PathEntry:
    """One path looked at the way ``os.scandir`` shows it (raises ``OSError`` when it is gone)."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.path = str(path)
        self._lstat = os.lstat(path)

    def is_symlink(self) -> bool:
        return stat_mod.S_ISLNK(self._lstat.st_mode)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if not follow_symlinks or not self.is_symlink():
            return stat_mod.S_ISDIR(self._lstat.st_mode)
        try:
            return stat_mod.S_ISDIR(os.stat(self.path).st_mode)
        except OSError:
            return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return os.stat(self.path) if follow_symlinks and self.is_symlink() else self._lstat


@dataclass
class PathScan:
    """The result of ``FilesystemConnector.scan_paths``."""

    candidates: list[Candidate] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)
    full: bool = False


def _outermost(rel_paths: Iterable[str]) -> list[str]:
    """The distinct paths, without those inside another one of them (a folder is scanned whole)."""
    paths = {p.strip("/") for p in rel_paths if p.strip("/") not in ("", ".")}
    out = []
    for path in sorted(paths):
        parts = path.split("/")
        if not any("/".join(parts[:i]) in paths for i in range(1, len(parts))):
            out.append(path)
    return out


def birth_time(stat: os.stat_result) -> dt.datetime | None:
    """When the file was created, where the file system and platform say (``st_birthtime``: macOS,
    BSD, Windows); None elsewhere (the document's first sync then stands for it)."""
    born = getattr(stat, "st_birthtime", None)
    return timestamps.from_unix(born) if isinstance(born, (int, float)) and born > 0 else None


class FilesystemConnector:
    type = "filesystem"

    def __init__(self, name: str, config: FilesystemConnectorConfig) -> None:
        self.name = name
        self.config = config
        self.root = Path(config.root)
        self._include = _spec(config.include_globs)
        self._exclude = _spec(config.exclude_globs)
        self.linked_dirs = False  # the last scan followed a folder symlink
        self._convertible: dict[str, bool] = {}  # document format -> converter installed (asked once a scan)

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def health(self) -> tuple[bool, str | None]:
        if not self.root.is_dir():
            return False, f"root folder {self.root} does not exist"
        return True, None

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        if not self.root.is_dir():
            raise FileNotFoundError(f"root folder {self.root} does not exist or is not a folder")
        self.linked_dirs = False
        real_root = os.path.realpath(self.root)
        self._convertible = {}
        yield from self._walk(self.root, real_root, "", [], set(), report)

    def scan_paths(self, rel_paths: Iterable[str], report: ScanReport) -> PathScan:
        """What a full scan would list at or under each of ``rel_paths`` (files or folders, relative
        to the root, ``/``-separated), by the same rules: the folders on the way must be walked by
        a scan (not skipped, excluded or gitignored), their ``.gitignore`` files apply, and a folder
        is re-scanned whole. ``covered`` holds the paths whose stored documents not listed are gone.
        ``full`` is True when only a full scan can tell (a folder on the way is a symlink, or the last
        scan followed folder symlinks, which makes the listed path of a file depend on walk order)."""
        if not self.root.is_dir():
            raise FileNotFoundError(f"root folder {self.root} does not exist or is not a folder")
        real_root = os.path.realpath(self.root)
        out = PathScan()
        for rel_path in _outermost(rel_paths):
            if self.linked_dirs:
                out.full = True
                return out
            out.covered.append(rel_path)
            if not self._path_candidates(rel_path, real_root, report, out):
                return out
        return out

    def _path_candidates(self, rel_path: str, real_root: str, report: ScanReport, out: PathScan) -> bool:
        """Add the candidates at or under ``rel_path`` to ``out``; False when a full scan is needed."""
        parts = rel_path.split("/")
        ignores = self._gitignores(self.root, "", [], report)
        folder = self.root
        for depth, name in enumerate(parts[:-1]):
            rel = "/".join(parts[:depth + 1])
            folder = folder / name
            try:
                if folder.is_symlink():
                    out.full = True
                    return False
                if not folder.is_dir():
                    return True
            except OSError:
                return True
            if name in ALWAYS_SKIPPED_DIRS or self._ignored(rel, True, ignores):
                return True
            ignores = self._gitignores(folder, rel, ignores, report)
        path = folder / parts[-1]
        try:
            entry = _PathEntry(path)
            if entry.is_symlink() and entry.is_dir():
                out.full = True
                return False
        except OSError:
            return True  # gone: its stored documents leave
        found = self._entry(entry, rel_path, real_root, ignores, report)
        if found == "dir":
            out.candidates.extend(self._walk(path, real_root, rel_path, ignores, set(), report))
        elif isinstance(found, Candidate):
            out.candidates.append(found)
        return True

    def _gitignores(self, folder: Path, rel: str, ignores: list[tuple[str, pathspec.PathSpec]],
                    report: ScanReport) -> list[tuple[str, pathspec.PathSpec]]:
        if self.config.respect_gitignore:
            gitignore = folder / ".gitignore"
            if gitignore.is_file():
                try:
                    lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    return ignores + [(rel, pathspec.GitIgnoreSpec.from_lines(lines))]
                except OSError:
                    report.skip("unreadable", f"{rel}/.gitignore")
        return ignores

    def _walk(self, folder: Path, real_root: str, rel: str, ignores: list[tuple[str, pathspec.PathSpec]],
              visited: set[str], report: ScanReport) -> Iterator[Candidate]:
        real_folder = os.path.realpath(folder)
        if real_folder in visited:
            return
        visited.add(real_folder)
        ignores = self._gitignores(folder, rel, ignores, report)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            report.skip("unreadable", rel or ".")
            return
        for entry in entries:
            rel_path = f"{rel}/{entry.name}" if rel else entry.name
            found = self._entry(entry, rel_path, real_root, ignores, report)
            if found == "dir":
                if entry.is_symlink():
                    self.linked_dirs = True
                yield from self._walk(Path(entry.path), real_root, rel_path, ignores, visited, report)
            elif isinstance(found, Candidate):
                yield found

    def _entry(self, entry: _Entry, rel_path: str, real_root: str, ignores: list[tuple[str, pathspec.PathSpec]],
               report: ScanReport) -> Candidate | str | None:
        """The scan's rules for one entry: its ``Candidate``, ``"dir"`` for a folder to walk, or None."""
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            report.skip("unreadable", rel_path, item=rel_path)
            return None
        if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
            return None
        if self._ignored(rel_path, is_dir, ignores):
            return None
        if is_link:
            if not self.config.follow_symlinks:
                report.skip("symlink", rel_path, item=rel_path)
                return None
            target = os.path.realpath(entry.path)
            if target != real_root and not target.startswith(real_root + os.sep):
                report.skip("symlink_escape", f"{rel_path} -> outside root", item=rel_path)
                return None
        if is_dir:
            return "dir"
        if not self._include.match_file(rel_path) or self._exclude.match_file(rel_path):
            return None
        return self._candidate(entry, rel_path, report)

    def _candidate(self, entry: _Entry, rel_path: str, report: ScanReport) -> Candidate | None:
        try:
            stat = entry.stat(follow_symlinks=True)
        except OSError:
            report.skip("unreadable", rel_path, item=rel_path)
            return None
        if stat.st_size > self.config.max_file_size:
            report.skip("too_large", f"{rel_path} ({stat.st_size} bytes > max_file_size)", item=rel_path)
            return None
        path = Path(entry.path)
        fmt = document_format(path.suffix)
        if fmt is not None and not self._can_convert(fmt):
            report.skip("needs_documents_extra", f"{rel_path} (a {fmt.name} file; {EXTRA_HINT})", item=rel_path)
            return None
        fingerprint = f"{stat.st_mtime_ns}:{stat.st_size}"
        born = birth_time(stat)
        if fmt is None:
            return Candidate(rel_path, fingerprint, self._loader(path, rel_path, stat.st_mtime, report, born))
        # The converter's version is part of the fingerprint: a better converter re-reads unchanged files.
        return Candidate(rel_path, f"{fingerprint}:c{documents.CONVERTER_VERSION}",
                         self._document_loader(path, rel_path, stat.st_mtime, fmt, report, born),
                         cost=DOCUMENT_COST + stat.st_size // 65_536)

    def _can_convert(self, fmt: DocumentFormat) -> bool:
        """Whether ``fmt``'s converter is installed; says once per scan how to install it if not."""
        if fmt.name not in self._convertible:
            self._convertible[fmt.name] = documents.available(fmt)
            if not self._convertible[fmt.name]:
                log.warning("%s: %s files are skipped: converting them needs the documents extra (%s)",
                            self.label, fmt.name, EXTRA_HINT)
        return self._convertible[fmt.name]

    def _ignored(self, rel_path: str, is_dir: bool, ignores: list[tuple[str, pathspec.PathSpec]]) -> bool:
        if self._exclude.match_file(rel_path + ("/" if is_dir else "")):
            return True
        for base, spec in ignores:
            sub = rel_path[len(base) + 1:] if base else rel_path
            if spec.match_file(sub + ("/" if is_dir else "")):
                return True
        return False

    def _loader(self, path: Path, rel_path: str, mtime: float, report: ScanReport, born: dt.datetime | None):
        def load() -> SourceItem | None:
            try:
                raw = path.read_bytes()
            except OSError:
                report.skip("unreadable", rel_path, item=rel_path)
                return None
            if b"\x00" in raw[:8192]:
                report.skip("binary", rel_path, item=rel_path)
                return None
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                report.skip("not_utf8", rel_path, item=rel_path)
                return None
            return self._item(path, rel_path, text.lstrip("\ufeff"), mtime, born)

        return load

    def _document_loader(self, path: Path, rel_path: str, mtime: float, fmt: DocumentFormat,
                         report: ScanReport, born: dt.datetime | None):
        """A PDF, DOCX or HTML file as raw bytes: the sync converts it (see ``ingest/documents.py``)."""
        def load() -> SourceItem | None:
            try:
                raw = path.read_bytes()
            except OSError:
                report.skip("unreadable", rel_path, item=rel_path)
                return None
            return SourceItem(source_id=rel_path, body="", title=path.stem, source_url=path.absolute().as_uri(),
                              content_type=fmt.content_type, updated_at=timestamps.from_unix(mtime), raw=raw,
                              created_at=born)

        return load

    def _item(self, path: Path, rel_path: str, text: str, mtime: float, born: dt.datetime | None = None) -> SourceItem:
        suffix = path.suffix.lower()
        meta, body = split_front_matter(text) if suffix in (".md", ".markdown", ".mdx") else ({}, text)
        title = meta.get("title")
        if not isinstance(title, str) or not title.strip():
            title = first_heading(body) if suffix != ".txt" else None
        if not title:
            title = path.stem
        author = meta.get("author")
        file_time = timestamps.from_unix(mtime)
        return SourceItem(
            source_id=rel_path,
            body=body,
            title=str(title).strip(),
            author=str(author) if author else None,
            source_url=path.absolute().as_uri(),
            content_type=_CONTENT_TYPES.get(suffix, "text/plain"),
            metadata=json_safe(meta),
            tags=front_matter_tags(meta),
            created_at=front_matter_time(meta, "created", "created_at", "date") or born,
            updated_at=front_matter_time(meta, "updated", "updated_at", "modified") or file_time,
        )
