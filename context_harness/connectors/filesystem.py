"""The filesystem connector: Markdown and text files under a folder, and PDF, DOCX and HTML files
converted to text when the documents extra is installed (``ingest/documents.py``).

Never reads outside ``root``: symlinks whose target leaves the root are skipped and counted.
Honours ``.gitignore`` files (root and nested), always skips ``.git`` and ``node_modules``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

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


class FilesystemConnector:
    type = "filesystem"

    def __init__(self, name: str, config: FilesystemConnectorConfig) -> None:
        self.name = name
        self.config = config
        self.root = Path(config.root)
        self._include = _spec(config.include_globs)
        self._exclude = _spec(config.exclude_globs)
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
        real_root = os.path.realpath(self.root)
        self._convertible = {}
        yield from self._walk(self.root, real_root, "", [], set(), report)

    def _walk(self, folder: Path, real_root: str, rel: str, ignores: list[tuple[str, pathspec.PathSpec]],
              visited: set[str], report: ScanReport) -> Iterator[Candidate]:
        real_folder = os.path.realpath(folder)
        if real_folder in visited:
            return
        visited.add(real_folder)
        if self.config.respect_gitignore:
            gitignore = folder / ".gitignore"
            if gitignore.is_file():
                try:
                    lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    ignores = ignores + [(rel, pathspec.GitIgnoreSpec.from_lines(lines))]
                except OSError:
                    report.skip("unreadable", f"{rel}/.gitignore")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            report.skip("unreadable", rel or ".")
            return
        for entry in entries:
            rel_path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                report.skip("unreadable", rel_path, item=rel_path)
                continue
            if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
                continue
            if self._ignored(rel_path, is_dir, ignores):
                continue
            if is_link:
                if not self.config.follow_symlinks:
                    report.skip("symlink", rel_path, item=rel_path)
                    continue
                target = os.path.realpath(entry.path)
                if target != real_root and not target.startswith(real_root + os.sep):
                    report.skip("symlink_escape", f"{rel_path} -> outside root", item=rel_path)
                    continue
            if is_dir:
                yield from self._walk(Path(entry.path), real_root, rel_path, ignores, visited, report)
                continue
            if not self._include.match_file(rel_path) or self._exclude.match_file(rel_path):
                continue
            candidate = self._candidate(entry, rel_path, report)
            if candidate is not None:
                yield candidate

    def _candidate(self, entry: os.DirEntry, rel_path: str, report: ScanReport) -> Candidate | None:
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
        if fmt is None:
            return Candidate(rel_path, fingerprint, self._loader(path, rel_path, stat.st_mtime, report))
        # The converter's version is part of the fingerprint: a better converter re-reads unchanged files.
        return Candidate(rel_path, f"{fingerprint}:c{documents.CONVERTER_VERSION}",
                         self._document_loader(path, rel_path, stat.st_mtime, fmt, report),
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

    def _loader(self, path: Path, rel_path: str, mtime: float, report: ScanReport):
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
            return self._item(path, rel_path, text.lstrip("\ufeff"), mtime)

        return load

    def _document_loader(self, path: Path, rel_path: str, mtime: float, fmt: DocumentFormat,
                         report: ScanReport):
        """A PDF, DOCX or HTML file as raw bytes: the sync converts it (see ``ingest/documents.py``)."""
        def load() -> SourceItem | None:
            try:
                raw = path.read_bytes()
            except OSError:
                report.skip("unreadable", rel_path, item=rel_path)
                return None
            return SourceItem(source_id=rel_path, body="", title=path.stem, source_url=path.absolute().as_uri(),
                              content_type=fmt.content_type, updated_at=timestamps.from_unix(mtime), raw=raw)

        return load

    def _item(self, path: Path, rel_path: str, text: str, mtime: float) -> SourceItem:
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
            created_at=front_matter_time(meta, "created", "created_at", "date"),
            updated_at=front_matter_time(meta, "updated", "updated_at", "modified") or file_time,
        )
