"""Where a note may be written: a user-given relative path resolved under a writable source's root.

Refuses, with a ``BadRequest`` naming the fix: absolute paths, ``..`` segments, NUL and other control or
invisible format characters (a line break, U+202E, U+200B: they spoof names in listings), a name over
255 bytes, hidden or
always-skipped folders (``.git``, the workspace's data), any existing component that is a symlink
(never followed, in or out), a path outside ``write_globs``, a non-Markdown target where one is
required, and a name that differs only in case from an existing entry. The folders on the way are
looked into one open folder from the other, from the held root (``notes.roots``), as the write walks.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path, PurePosixPath

import pathspec

from context_harness.errors import BadRequest
from context_harness.notes.folder import CLOEXEC, DIRECTORY, NOFOLLOW, Held, refusals

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
MARKDOWN = (".md",)
NAME_BYTES = 255


def resolve(root: Path | Held, rel: str, write_globs: list[str] | None = None, *, markdown: bool = True,
            naming: bool = True) -> Path:
    """The absolute path ``rel`` names under ``root``, checked (see the module docstring). ``naming=False``
    for a note that exists already: its name is not judged, only where it is. A held root
    (``notes.roots``) is checked and looked into from its descriptor, never through its path."""
    parts = _parts(rel, naming)
    if write_globs and not pathspec.PathSpec.from_lines("gitignore", write_globs).match_file("/".join(parts)):
        raise BadRequest(f"path {rel!r} is outside this source's write_globs ({', '.join(write_globs)}); "
                         "choose a path they match, or widen write_globs in the config")
    if markdown and not parts[-1].lower().endswith(MARKDOWN):
        raise BadRequest(f"path {rel!r} is not a Markdown note; end it with .md")
    with refusals(rel, "changed"):
        _look(root, parts, rel)
    return Path(root if isinstance(root, Path) else root.path).joinpath(*parts)


def _look(root: Path | Held, parts: list[str], rel: str) -> None:
    """Walk ``parts`` from ``root`` as far as they exist, one open folder at a time: no component may
    be a symlink, each but the last a folder, none a case twin of an existing entry."""
    if isinstance(root, Path):
        fd: int | None = os.open(root, os.O_RDONLY | DIRECTORY | CLOEXEC)
    else:
        root.check()
        fd = root.open()
    try:
        for index, name in enumerate(parts):
            assert fd is not None
            _check_case(fd, name, rel)
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                return  # the rest is made by the write
            if stat.S_ISLNK(mode):
                raise BadRequest(f"path {rel!r} goes through a symlink ({'/'.join(parts[:index + 1])}); notes are "
                                 "never written through symlinks: choose a path of real folders")
            if index == len(parts) - 1:
                return
            if not stat.S_ISDIR(mode):
                raise BadRequest(f"path {rel!r}: {'/'.join(parts[:index + 1])} is a file, not a folder")
            parent, fd = fd, None
            try:
                fd = os.open(name, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=parent)
            finally:
                os.close(parent)
    finally:
        if fd is not None:
            os.close(fd)


def _parts(rel: str, naming: bool = True) -> list[str]:
    if not isinstance(rel, str) or not rel.strip():
        raise BadRequest("path is empty; give a path relative to the source's root, e.g. inbox/note.md")
    if "\x00" in rel:
        raise BadRequest("path contains a NUL character; remove it")
    if rel.startswith(("/", "\\")) or PurePosixPath(rel).is_absolute() or (len(rel) > 1 and rel[1] == ":"):
        raise BadRequest(f"path {rel!r} is absolute; give it relative to the source's root, e.g. inbox/note.md")
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadRequest(f"path {rel!r} has a '..' segment; give a path inside the source's root without '..'")
    for name in parts:
        if naming:
            _check_name(name, rel)
        if name.startswith(".") or name in SKIPPED_DIRS:
            raise BadRequest(f"path {rel!r} goes into {name!r}, a hidden or skipped name; notes live in "
                             "ordinary folders")
    if not parts:
        raise BadRequest(f"path {rel!r} names the root itself; give a file name, e.g. inbox/note.md")
    return parts


def _check_name(name: str, rel: str) -> None:
    odd = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if odd is not None:
        raise BadRequest(f"path {rel!r} has the invisible or control character U+{ord(odd):04X} "
                         f"({unicodedata.name(odd, 'control')}); names may hold only visible characters and spaces")
    if len(name.encode("utf-8")) > NAME_BYTES:
        raise BadRequest(f"the name {name[:40]!r}... is {len(name.encode('utf-8'))} bytes; a file or "
                         f"folder name holds at most {NAME_BYTES} bytes, choose a shorter one")


def _check_case(folder: int, name: str, rel: str) -> None:
    """Refuse ``name`` when the open ``folder`` holds an entry equal to it but for case (the case trick)."""
    names = os.listdir(folder)
    if name in names:
        return
    twin = next((n for n in names if n.casefold() == name.casefold()), None)
    if twin is not None:
        raise BadRequest(f"path {rel!r}: {name!r} differs only in case from the existing {twin!r}; "
                         "use the existing name exactly")


__all__ = ["resolve"]
