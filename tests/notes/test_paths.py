"""Where a note may be written: every refusal of ``notes.paths.resolve``, on real folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_harness.errors import BadRequest
from context_harness.notes.paths import resolve


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "inbox").mkdir(parents=True)
    (tmp_path / "root" / "Notes").mkdir()
    (tmp_path / "root" / ".git").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "root"


def test_a_plain_path_resolves_under_the_root(root: Path) -> None:
    assert resolve(root, "inbox/today.md") == root / "inbox" / "today.md"
    assert resolve(root, "new/folder/note.md") == root / "new" / "folder" / "note.md"


@pytest.mark.parametrize(("rel", "words"), [
    ("/etc/passwd.md", "absolute"),
    ("../outside/x.md", "'..'"),
    ("inbox/../../outside/x.md", "'..'"),
    ("inbox/a\x00b.md", "NUL"),
    (".git/config.md", "hidden"),
    ("inbox/.ctx/x.md", "hidden"),
    ("node_modules/x.md", "skipped"),
    ("inbox/notes.txt", ".md"),
    ("notes/x.md", "case"),
    ("", "empty"),
])
def test_hostile_paths_are_refused_naming_the_fix(root: Path, rel: str, words: str) -> None:
    with pytest.raises(BadRequest) as caught:
        resolve(root, rel)
    assert words in caught.value.message


def test_symlinks_are_never_followed_in_or_out(root: Path) -> None:
    os.symlink(root.parent / "outside", root / "out")
    os.symlink(root / "inbox", root / "in")
    (root / "inbox" / "real.md").write_text("x")
    os.symlink(root / "inbox" / "real.md", root / "inbox" / "link.md")
    for rel in ("out/x.md", "in/x.md", "inbox/link.md"):
        with pytest.raises(BadRequest, match="symlink"):
            resolve(root, rel)
    assert not (root.parent / "outside" / "x.md").exists()


def test_write_globs_limit_where(root: Path) -> None:
    assert resolve(root, "inbox/a.md", ["inbox/**"]) == root / "inbox" / "a.md"
    with pytest.raises(BadRequest, match="write_globs"):
        resolve(root, "Notes/a.md", ["inbox/**"])
