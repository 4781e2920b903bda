"""The filesystem connector: Markdown and text files under a folder, and PDF, DOCX and HTML files
converted to text when the documents extra is installed (``formats/documents.py``).

Never reads outside ``root``: symlinks whose target leaves the root are skipped and counted, and the
root itself is held open (``held.py``): every scan walks from that descriptor, and a root swapped for a
symlink or another folder fails the sync instead of being followed.
Honours ``.gitignore`` files (root and nested), always skips ``.git`` and ``node_modules``.
Nothing on disk stops a scan: only regular files are read, never past ``max_file_size``
(``reading.py``); the walk is iterative (any depth) and a folder or entry it cannot read is a named
skip. Any file name the OS allows is indexed: ``source_id`` is ``names.escape_name`` of the path.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat as stat_mod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import quote_from_bytes

import pathspec

from context_harness.common import symbols, timestamps
from context_harness.config import FilesystemConnectorConfig, default_include_globs
from context_harness.connectors.base import Candidate, PathScan, ScanReport, SourceItem, WriteSettings
from context_harness.connectors.held import Holder, RootGuard
from context_harness.connectors.names import escape_name
from context_harness.connectors.reading import (
    DIR_FLAGS,
    FD_WALK,
    NOFOLLOW,
    Skip,
    open_under,
    os_reason,
    read_regular,
    stat_under,
)
from context_harness.formats import documents, outlines
from context_harness.formats.documents import EXTRA_HINT, DocumentFormat, document_format
from context_harness.formats.markdown import (
    first_heading,
    front_matter_tags,
    front_matter_time,
    json_safe,
    note_tags,
    split_front_matter,
)

log = logging.getLogger(__name__)
DOCUMENT_COST = 32  # a document to convert, as work, against a text file (Candidate.cost), plus 1 per 64 kB
ALWAYS_SKIPPED_DIRS = frozenset({".git", "node_modules", ".hg", ".svn", "__pycache__", ".ctx"})
GITIGNORE_LIMIT = 1 << 20  # bytes of a .gitignore read
_CONTENT_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".mdx": "text/markdown",
                  ".rst": "text/x-rst", ".txt": "text/plain"}

Ignores = list[tuple[str, pathspec.PathSpec]]
LEFT_OUT = "the source's include_globs, exclude_globs or a .gitignore leave it out"
SKIPS_SAID = {  # a skip reason of one file, as the end of "saved but not indexed: ..."
    "binary": "it holds a NUL byte in its first 8 kB, so it is taken for a binary file",
    "not_utf8": "it is not valid UTF-8 text",
    "too_large": "it is larger than the source's max_file_size",
    "not_a_regular_file": "it is not a regular file",
    "symlink": "it is a symlink and the source does not follow symlinks",
    "symlink_escape": "it is a symlink to a place outside the source",
    "needs_documents_extra": "converting it needs the documents extra",
}


def _spec(patterns: list[str]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", patterns)


def spellings(rel_path: str) -> tuple[str, ...]:
    """``rel_path``, and, when its extension has capitals, the same with the extension in lower case:
    globs match a file's extension whatever its case (``X.MD`` is Markdown as ``x.md`` is), its
    folders and name as written."""
    stem, dot, extension = rel_path.rpartition(".")
    if not dot or "/" in extension or not stem or stem.endswith("/") or extension == extension.lower():
        return (rel_path,)
    return (rel_path, f"{stem}.{extension.lower()}")


class Globs:
    """``include_globs`` and ``exclude_globs``: gitignore-style patterns over ``/``-separated paths
    relative to the connector's root (the S3 connector matches its keys with these too). A file's
    extension matches whatever its case (``spellings``)."""

    def __init__(self, include: list[str], exclude: list[str]) -> None:
        self.include = _spec(symbols.expand_globs(include, default_include_globs()))  # presets: @code, @default
        self.exclude = _spec(exclude)

    def wanted(self, rel_path: str) -> bool:
        """Whether a file at ``rel_path`` is indexed: an include pattern matches and no exclude does."""
        forms = spellings(rel_path)
        return any(map(self.include.match_file, forms)) and not self.excluded(forms)

    def excluded(self, forms: tuple[str, ...]) -> bool:
        return any(map(self.exclude.match_file, forms))


class _Entry(Protocol):
    """What the scan's rules read of a folder entry (an ``os.DirEntry`` or a ``_PathEntry``)."""

    @property
    def name(self) -> str: ...

    def is_symlink(self) -> bool: ...

    def is_dir(self, *, follow_symlinks: bool = True) -> bool: ...

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result: ...


class _PathEntry:
    """One path looked at the way ``os.scandir`` shows it (raises ``OSError`` when it is gone); with
    ``dir_fd``, its name in the folder open as that descriptor (which must stay open while it is used)."""

    def __init__(self, root: str, rel: str, dir_fd: int | None = None) -> None:
        self.name = rel.rpartition("/")[2]
        self._root, self._rel, self._dir_fd = root, rel, dir_fd
        self._lstat = self._stat(follow_symlinks=False)

    def _stat(self, follow_symlinks: bool) -> os.stat_result:
        if self._dir_fd is not None:
            return os.stat(self.name, dir_fd=self._dir_fd, follow_symlinks=follow_symlinks)
        return stat_under(self._root, self._rel, follow_symlinks=follow_symlinks)

    def is_symlink(self) -> bool:
        return stat_mod.S_ISLNK(self._lstat.st_mode)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if not follow_symlinks or not self.is_symlink():
            return stat_mod.S_ISDIR(self._lstat.st_mode)
        try:
            return stat_mod.S_ISDIR(self.stat().st_mode)
        except OSError:
            return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._stat(follow_symlinks=True) if follow_symlinks and self.is_symlink() else self._lstat


@dataclass
class _Sub:
    """A sub-folder the walk enters after the entries before it."""

    rel: str
    ignores: Ignores


class _Opener:
    """Opens the walk's folders. It keeps the last one open, so that its sub-folder opens by one short
    name: a 10,000-deep tree costs no more than a wide one, and no path grows past ``PATH_MAX``."""

    def __init__(self, root: str, follow_symlinks: bool, root_fd: int | None = None) -> None:
        self.root, self.root_fd = root, root_fd
        self.flags = DIR_FLAGS | (0 if follow_symlinks else NOFOLLOW)
        self.last: tuple[str, int] | None = None

    def open(self, rel: str) -> int:
        """A descriptor of the folder ``rel``, valid until the next ``open`` or ``close``."""
        parent, _, name = rel.rpartition("/")
        if not rel:
            fd = open_under(self.root, "", DIR_FLAGS, root_fd=self.root_fd)  # held, or by path (a symlink)
        elif self.last is not None and self.last[0] == parent:
            fd = open_under(self.root, name, self.flags, dir_fd=self.last[1])
        else:
            fd = open_under(self.root, rel, self.flags, root_fd=self.root_fd)
        self.close()
        self.last = (rel, fd)
        return fd

    def close(self) -> None:
        if self.last is not None:
            os.close(self.last[1])
            self.last = None


def _outermost(rel_paths: Iterable[str]) -> list[str]:
    """The distinct paths, without those inside another one of them (a folder is scanned whole)."""
    paths = {p.strip("/") for p in rel_paths if p.strip("/") not in ("", ".")}
    out = []
    for path in sorted(paths):
        ends = (i for i, char in enumerate(path) if char == "/")
        if not any(path[:i] in paths for i in ends):
            out.append(path)
    return out


def birth_time(stat: os.stat_result) -> dt.datetime | None:
    """When the file was created, where the file system and platform say (``st_birthtime``: macOS,
    BSD, Windows); None elsewhere (the document's first sync then stands for it)."""
    born = getattr(stat, "st_birthtime", None)
    return timestamps.from_unix(born) if isinstance(born, (int, float)) and born > 0 else None


def _shown(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class FilesystemConnector:
    type = "filesystem"

    def __init__(self, name: str, config: FilesystemConnectorConfig) -> None:
        self.name = name
        self.config = config
        self.root = Path(config.root)
        self._root = os.fspath(self.root)
        self._root_uri: str | None = None
        self._real_root = os.path.realpath(self.root)
        self._guard = RootGuard(self.root, self.label)
        self._root_fd: int | None = None  # the held root's descriptor during a scan (``held.py``)
        self._globs = Globs(config.include_globs, config.exclude_globs)
        self.linked_dirs = False  # the last scan followed a folder symlink
        self._convertible: dict[str, bool] = {}  # document format -> converter installed (asked once a scan)

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def health(self) -> tuple[bool, str | None]:
        if not self.root.is_dir():
            return False, f"root folder {self.root} does not exist"
        swapped = self._guard.failure() if FD_WALK else None
        return (False, swapped) if swapped else (True, None)

    def hold_root(self, holder: Holder | None = None) -> None:
        """Hold the root folder open now (``held.py``): through ``holder``, a writable source's root
        the note tools hold, else its own; every later scan walks from it."""
        if FD_WALK:
            self._guard.hold(holder)

    def _begin(self) -> None:
        """At the start of a scan: the held root, checked (``FileNotFoundError`` when there is no
        folder, ``Conflict`` when the path names another folder than the one held)."""
        if not FD_WALK:  # no descriptor walk here: by path, as configured
            if not self.root.is_dir():
                raise FileNotFoundError(f"root folder {self.root} does not exist or is not a folder")
            self._real_root = os.path.realpath(self.root)
            return
        held = self._guard.current()
        self._root_fd, self._real_root = held.fd, os.fspath(held.real)

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        self._begin()
        self.linked_dirs = False
        self._convertible = {}
        yield from self._walk("", [], set(), report)

    def scan_paths(self, rel_paths: Iterable[str], report: ScanReport) -> PathScan:
        """What a full scan would list at or under each of ``rel_paths`` (OS paths relative to the
        root, ``/``-separated, as ``os`` gives them), by the same rules: the folders on the way must be
        walked by a scan (not skipped, excluded or gitignored), their ``.gitignore`` files apply, and a
        folder is re-scanned whole. ``covered`` holds the ``source_id`` prefixes (escaped) whose stored
        documents not listed are gone. ``full`` is True when only a full scan can tell (a folder on the
        way is a symlink, or the last scan followed folder symlinks, which makes the listed path of a
        file depend on walk order)."""
        self._begin()
        out = PathScan()
        for rel_path in _outermost(rel_paths):
            if self.linked_dirs:
                out.full = True
                return out
            out.covered.append(escape_name(rel_path))
            if not self._path_candidates(rel_path, report, out):
                return out
        return out

    def write_settings(self) -> WriteSettings | None:
        """Where the note tools may write (``Writable``): None unless ``writable = true``."""
        if not self.config.writable:
            return None
        return WriteSettings(self.root, self.config.write_globs, self.config.front_matter)

    def unindexed_reason(self, rel_path: str) -> str:
        """Why a file at ``rel_path`` (``/``-separated, relative to the root) is not indexed, in words
        ("it holds a NUL byte ...", ``LEFT_OUT``): what a sync of that path finds, reading the file."""
        report = ScanReport()
        source_id = escape_name(rel_path)
        for candidate in self.scan_paths([rel_path], report).candidates:
            if candidate.source_id == source_id and candidate.load() is not None:
                return "it was read as it is now; sync the source again"
        reason = next((r for item, r in report.named if item == source_id), None)
        if reason is None:
            return LEFT_OUT
        return SKIPS_SAID.get(reason, f"it was skipped ({reason})")

    def _path_candidates(self, rel_path: str, report: ScanReport, out: PathScan) -> bool:
        """Add the candidates at or under ``rel_path`` to ``out``; False when a full scan is needed.
        The folders on the way are opened one from the other (any depth costs one step each)."""
        opener = _Opener(self._root, follow_symlinks=False, root_fd=self._root_fd)
        try:
            return self._path_in(opener, rel_path, report, out)
        finally:
            opener.close()

    def _path_in(self, opener: _Opener, rel_path: str, report: ScanReport, out: PathScan) -> bool:
        parts = rel_path.split("/")
        try:
            fd = opener.open("") if FD_WALK else None
        except OSError:
            return True
        ignores = self._gitignores(fd, "", [], report)
        rel = ""
        for name in parts[:-1]:
            rel = f"{rel}/{name}" if rel else name
            try:
                mode = _PathEntry(self._root, rel, fd)._lstat.st_mode
            except OSError:
                return True
            if stat_mod.S_ISLNK(mode):
                out.full = True
                return False
            if not stat_mod.S_ISDIR(mode) or name in ALWAYS_SKIPPED_DIRS or self._ignored(rel, True, ignores):
                return True
            try:
                fd = opener.open(rel) if FD_WALK else None
            except OSError:
                return True  # unreadable or gone: as a full scan, nothing under it is listed
            ignores = self._gitignores(fd, rel, ignores, report)
        try:
            entry = _PathEntry(self._root, rel_path, fd)
            if entry.is_symlink() and entry.is_dir():
                out.full = True
                return False
        except OSError:
            return True  # gone: its stored documents leave
        found = self._entry(entry, rel_path, ignores, report)
        if found == "dir":
            out.candidates.extend(self._walk(rel_path, ignores, set(), report))
        elif isinstance(found, Candidate):
            out.candidates.append(found)
        return True

    def _gitignores(self, dir_fd: int | None, rel: str, ignores: Ignores, report: ScanReport) -> Ignores:
        """``ignores`` plus the folder's own ``.gitignore`` (read in the folder open as ``dir_fd``, else
        by path). One that cannot be read (a FIFO, too large, no permission) is a named skip."""
        if not self.config.respect_gitignore:
            return ignores
        name = f"{rel}/.gitignore" if rel else ".gitignore"
        try:
            raw = read_regular(self._root, ".gitignore" if dir_fd is not None else name, GITIGNORE_LIMIT,
                               dir_fd=dir_fd)
        except FileNotFoundError:
            return ignores
        except Skip as skip:
            report.skip(skip.reason, f"{name} ({skip.reason})", item=escape_name(name))
            return ignores
        except OSError as exc:
            reason = os_reason(exc)
            if reason != "vanished":
                report.skip(reason, f"{name} ({_shown(exc)})", item=escape_name(name))
            return ignores
        lines = raw.decode("utf-8", errors="replace").splitlines()
        return ignores + [(rel, pathspec.GitIgnoreSpec.from_lines(lines))]

    def _walk(self, rel: str, ignores: Ignores, visited: set[tuple[int, int]],
              report: ScanReport) -> Iterator[Candidate]:
        """Every candidate at or under the folder ``rel``, depth first in name order, without recursion
        (any depth): a stack of the folders entered, each listed whole when entered."""
        opener = _Opener(self._root, self.config.follow_symlinks, self._root_fd)
        try:
            stack = [iter(self._folder(opener, rel, ignores, visited, report))]
            while stack:
                found = next(stack[-1], None)
                if found is None:
                    stack.pop()
                elif isinstance(found, _Sub):
                    stack.append(iter(self._folder(opener, found.rel, found.ignores, visited, report)))
                else:
                    yield found
        finally:
            opener.close()

    def _folder(self, opener: _Opener, rel: str, ignores: Ignores, visited: set[tuple[int, int]],
                report: ScanReport) -> list[Candidate | _Sub]:
        """The folder's candidates and sub-folders in name order, read while it is open (its entries,
        their stat, its ``.gitignore``). A folder that cannot be opened or listed is a named skip
        (``unreadable``: no permission, ``lost+found``), and one already walked (a link cycle) is empty."""
        shown = rel or "."
        try:
            fd = opener.open(rel) if FD_WALK else None
            folder_stat = os.fstat(fd) if fd is not None else os.stat(os.path.join(self._root, rel))
            if (folder_stat.st_dev, folder_stat.st_ino) in visited:
                return []
            visited.add((folder_stat.st_dev, folder_stat.st_ino))
            ignores = self._gitignores(fd, rel, ignores, report)
            with os.scandir(fd if fd is not None else os.path.join(self._root, rel)) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            return [found for entry in entries if (found := self._listed(entry, rel, ignores, report)) is not None]
        except OSError as exc:
            report.skip(os_reason(exc), f"{shown}/ ({_shown(exc)})", item=escape_name(shown))
            return []

    def _listed(self, entry: os.DirEntry[str], rel: str, ignores: Ignores,
                report: ScanReport) -> Candidate | _Sub | None:
        """One listed entry by the scan's rules; any failure on it is a named skip of it alone."""
        rel_path = f"{rel}/{entry.name}" if rel else entry.name
        try:
            found = self._entry(entry, rel_path, ignores, report)
        except Exception as exc:  # one entry never stops the scan
            log.warning("%s: skipped %r: %s: %s", self.label, rel_path, type(exc).__name__, exc)
            report.skip("error", f"{rel_path} ({type(exc).__name__})", item=escape_name(rel_path))
            return None
        if found == "dir":
            return _Sub(rel_path, ignores)
        return found if isinstance(found, Candidate) else None

    def _entry(self, entry: _Entry, rel_path: str, ignores: Ignores,
               report: ScanReport) -> Candidate | str | None:
        """The scan's rules for one entry: its ``Candidate``, ``"dir"`` for a folder to walk, or None."""
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError as exc:
            report.skip(os_reason(exc), rel_path, item=escape_name(rel_path))
            return None
        if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
            return None
        if self._ignored(rel_path, is_dir, ignores):
            return None
        if is_link:
            if not self.config.follow_symlinks:
                report.skip("symlink", rel_path, item=escape_name(rel_path))
                return None
            real_root = self._real_root  # the held folder's: the root's path may name another by now
            target = os.path.realpath(os.path.join(real_root, rel_path))
            if target != real_root and not target.startswith(real_root + os.sep):
                report.skip("symlink_escape", f"{rel_path} -> outside root", item=escape_name(rel_path))
                return None
        if is_dir:
            self.linked_dirs = self.linked_dirs or is_link
            return "dir"
        if not self._globs.wanted(rel_path):
            return None
        return self._candidate(entry, rel_path, report)

    def _candidate(self, entry: _Entry, rel_path: str, report: ScanReport) -> Candidate | None:
        source_id = escape_name(rel_path)
        try:
            stat = entry.stat(follow_symlinks=True)
        except OSError as exc:
            report.skip(os_reason(exc), rel_path, item=source_id)
            return None
        if not stat_mod.S_ISREG(stat.st_mode):
            report.skip("not_a_regular_file", f"{rel_path} (a FIFO, socket or device)", item=source_id)
            return None
        if stat.st_size > self.config.max_file_size:
            report.skip("too_large", f"{rel_path} ({stat.st_size} bytes > max_file_size)", item=source_id)
            return None
        fmt = document_format(PurePosixPath(rel_path).suffix)
        if fmt is not None and not self._can_convert(fmt):
            report.skip("needs_documents_extra", f"{rel_path} (a {fmt.name} file; {EXTRA_HINT})", item=source_id)
            return None
        fingerprint = f"{stat.st_mtime_ns}:{stat.st_size}"
        born = birth_time(stat)
        if fmt is None:
            if outlines.kind_of(rel_path):  # reST, AsciiDoc, Org: a better reading re-reads unchanged files
                fingerprint += f":s{outlines.READER_VERSION}"
            return Candidate(source_id, fingerprint, self._loader(rel_path, stat.st_mtime, report, born))
        # The converter's version is part of the fingerprint: a better converter re-reads unchanged files.
        return Candidate(source_id, f"{fingerprint}:c{documents.CONVERTER_VERSION}",
                         self._document_loader(rel_path, stat.st_mtime, fmt, report, born),
                         cost=DOCUMENT_COST + stat.st_size // 65_536)

    def _read(self, rel_path: str, report: ScanReport) -> bytes | None:
        """The file's bytes now (never past ``max_file_size``, never blocking), or None: a named skip
        when it became something else, grew, vanished or lost permission since it was listed.
        ``Conflict`` when the root was swapped (the sync keeps the stored copy)."""
        if self._root_fd is not None:
            self._guard.check()  # a swapped root: an error, so the stored copy is kept (not a skip)
        try:
            return read_regular(self._root, rel_path, self.config.max_file_size,
                                follow_symlinks=self.config.follow_symlinks, real_root=self._real_root,
                                root_fd=self._root_fd)
        except Skip as skip:
            report.skip(skip.reason, str(skip), item=escape_name(rel_path))
        except OSError as exc:
            report.skip(os_reason(exc), f"{rel_path} ({_shown(exc)})", item=escape_name(rel_path))
        return None

    def _can_convert(self, fmt: DocumentFormat) -> bool:
        """Whether ``fmt``'s converter is installed; says once per scan how to install it if not."""
        if fmt.name not in self._convertible:
            self._convertible[fmt.name] = documents.available(fmt)
            if not self._convertible[fmt.name]:
                log.warning("%s: %s files are skipped: converting them needs the documents extra (%s)",
                            self.label, fmt.name, EXTRA_HINT)
        return self._convertible[fmt.name]

    def _ignored(self, rel_path: str, is_dir: bool, ignores: list[tuple[str, pathspec.PathSpec]]) -> bool:
        if self._globs.excluded((rel_path + "/",) if is_dir else spellings(rel_path)):
            return True
        for base, spec in ignores:
            sub = rel_path[len(base) + 1:] if base else rel_path
            if spec.match_file(sub + ("/" if is_dir else "")):
                return True
        return False

    def _loader(self, rel_path: str, mtime: float, report: ScanReport, born: dt.datetime | None):
        def load() -> SourceItem | None:
            raw = self._read(rel_path, report)
            if raw is None:
                return None
            text = decode_text(raw, rel_path, escape_name(rel_path), report)
            return None if text is None else self._item(rel_path, text, mtime, born)

        return load

    def _document_loader(self, rel_path: str, mtime: float, fmt: DocumentFormat, report: ScanReport,
                         born: dt.datetime | None):
        """A PDF, DOCX or HTML file as raw bytes: the sync converts it (see ``formats/documents.py``)."""
        def load() -> SourceItem | None:
            raw = self._read(rel_path, report)
            if raw is None:
                return None
            source_id = escape_name(rel_path)
            return SourceItem(source_id=source_id, body="", title=PurePosixPath(source_id).stem,
                              source_url=self._url(rel_path), content_type=fmt.content_type,
                              updated_at=timestamps.from_unix(mtime), raw=raw, created_at=born)

        return load

    def _url(self, rel_path: str) -> str:
        """The file's ``file://`` URL (any bytes of its name percent-encoded), as ``Path.as_uri``
        gives it; the root's part is made once (``as_uri`` of every file cost 2.7 s in 100,000)."""
        if self._root_uri is None:
            uri = Path(self._root).absolute().as_uri()
            self._root_uri = uri if uri.endswith("/") else uri + "/"
        return self._root_uri + quote_from_bytes(os.fsencode(rel_path))

    def _item(self, rel_path: str, text: str, mtime: float, born: dt.datetime | None = None) -> SourceItem:
        return text_item(escape_name(rel_path), text, timestamps.from_unix(mtime), self._url(rel_path), born)


def decode_text(raw: bytes, shown: str, source_id: str, report: ScanReport) -> str | None:
    """A text file's bytes as text (without a byte order mark), or None: a named skip (``binary``:
    a NUL byte in its first 8 kB, ``not_utf8``)."""
    if b"\x00" in raw[:8192]:
        report.skip("binary", shown, item=source_id)
        return None
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError:
        report.skip("not_utf8", shown, item=source_id)
        return None


def text_item(source_id: str, text: str, file_time: dt.datetime, url: str,
              born: dt.datetime | None = None) -> SourceItem:
    """A Markdown, reST, AsciiDoc, Org, text or code file as an item: code (``common.symbols``) titled by
    its path, with its language as metadata; front matter (Markdown) gives its title,
    author, tags and dates; reST, AsciiDoc and Org their title and sections (``formats/outlines.py``:
    the body's headings become Markdown headings); else its first heading (not for .txt) or its name
    is the title, the file time its date."""
    if (code := symbols.language_for(source_id)) is not None:  # read as code (ingest/code_chunking.py)
        return SourceItem(source_id=source_id, body=text, title=source_id, source_url=url,
                          content_type=symbols.content_type(code), metadata={"language": code},
                          created_at=born, updated_at=file_time)
    suffix = PurePosixPath(source_id).suffix.lower()
    kind = outlines.kind_of(source_id)
    read = outlines.structured(source_id, text) if kind else None
    meta, body = split_front_matter(text) if suffix in (".md", ".markdown", ".mdx") else ({}, text)
    title = meta.get("title")
    if read is not None:
        title, body = read.title, read.body
    elif not isinstance(title, str) or not title.strip():
        title = first_heading(body) if suffix != ".txt" and kind is None else None
    if not title:
        title = PurePosixPath(source_id).stem
    author = meta.get("author")
    return SourceItem(
        source_id=source_id,
        body=body,
        title=str(title).strip(),
        author=str(author) if author else None,
        source_url=url,
        content_type=outlines.CONTENT_TYPES[kind] if kind else _CONTENT_TYPES.get(suffix, "text/plain"),
        metadata=json_safe(meta),
        tags=note_tags(meta, body) if suffix in (".md", ".markdown", ".mdx") else front_matter_tags(meta),
        created_at=front_matter_time(meta, "created", "created_at", "date") or born,
        updated_at=front_matter_time(meta, "updated", "updated_at", "modified") or file_time,
    )
