"""``FilesystemConnector.scan_paths`` decides each path exactly as a full scan does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_harness.config import FilesystemConnectorConfig
from context_harness.connectors.base import ScanReport
from context_harness.connectors.filesystem import FilesystemConnector
from support.workspace import write_files

TREE = {
    "a.md": "# A\n",
    "b.txt": "plain\n",
    "c.py": "print('not a document')\n",
    "big.md": "x" * 3000,
    "drafts/d.md": "# Draft\n",
    "drafts/keep.md": "# Kept\n",
    "drafts/.gitignore": "d.md\n",
    "notes/deep/e.md": "# E\n",
    "notes/deep/.gitignore": "*.tmp.md\nsecret/\n",
    "notes/deep/f.tmp.md": "# F\n",
    "notes/deep/secret/g.md": "# G\n",
    "notes/h.md": "# H\n",
    "build/i.md": "# I\n",
    "private/j.md": "# J\n",
    "node_modules/pkg/k.md": "# K\n",
    ".git/l.md": "# L\n",
    ".gitignore": "build/\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_files(root, TREE)
    outside = tmp_path / "outside"
    write_files(outside, {"o.md": "# O\n"})
    os.symlink(outside / "o.md", root / "escape.md")
    os.symlink(root / "a.md", root / "alias.md")
    return root


def connector(root: Path) -> FilesystemConnector:
    return FilesystemConnector("docs", FilesystemConnectorConfig(
        root=root, exclude_globs=["private/**"], max_file_size=2000))


def every_path(root: Path) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return sorted(out) + ["missing.md", "notes/missing", "nowhere/x.md"]


def test_each_path_gives_what_a_full_scan_lists_there(tree: Path) -> None:
    fs = connector(tree)
    full = {c.source_id: c.fingerprint for c in fs.scan(ScanReport())}
    assert sorted(full) == ["a.md", "alias.md", "b.txt", "drafts/keep.md", "notes/deep/e.md", "notes/h.md"]
    for rel in every_path(tree):
        scan = fs.scan_paths([rel], ScanReport())
        assert not scan.full and scan.covered == [rel]
        expected = {k: v for k, v in full.items() if k == rel or k.startswith(rel + "/")}
        assert {c.source_id: c.fingerprint for c in scan.candidates} == expected, rel


def test_several_paths_and_nested_ones_are_scanned_once(tree: Path) -> None:
    fs = connector(tree)
    scan = fs.scan_paths(["notes", "notes/h.md", "a.md", "notes/deep/e.md", "./", ""], ScanReport())
    assert scan.covered == ["a.md", "notes"]
    assert sorted(c.source_id for c in scan.candidates) == ["a.md", "notes/deep/e.md", "notes/h.md"]


def test_skips_are_reported_as_a_scan_reports_them(tree: Path) -> None:
    fs = connector(tree)
    report = ScanReport()
    fs.scan_paths(["big.md", "escape.md"], report)
    assert dict(report.skipped) == {"too_large": 1, "symlink_escape": 1}


def test_a_folder_symlink_makes_it_a_question_for_a_full_scan(tree: Path) -> None:
    fs = connector(tree)
    os.symlink(tree / "notes", tree / "linked")
    assert fs.scan_paths(["linked/h.md"], ScanReport()).full
    assert fs.scan_paths(["linked"], ScanReport()).full
    list(fs.scan(ScanReport()))  # the scan followed a folder symlink: walk order decides paths
    assert fs.scan_paths(["a.md"], ScanReport()).full


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        connector(tmp_path / "gone").scan_paths(["a.md"], ScanReport())
