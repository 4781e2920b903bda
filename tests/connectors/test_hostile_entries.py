"""What a real folder holds that is not a note: FIFOs, sockets and device nodes named like notes,
files that grow, vanish or turn into something else between the scan and the read, a ``.gitignore``
that is a FIFO, nesting deeper than ``PATH_MAX``. None of them blocks, floods or stops a scan; each
is a named skip, and every ordinary file beside them is read."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from context_harness.config import FilesystemConnectorConfig
from context_harness.connectors.base import ERROR_SKIP_REASONS, ScanReport, SourceItem
from context_harness.connectors.filesystem import FilesystemConnector
from support.trees import make_deep, make_device, make_socket, remove_deep, unblock_fifos, within


def connector(root: Path, **config) -> FilesystemConnector:
    return FilesystemConnector("docs", FilesystemConnectorConfig(root=root, **config))


def read_all(fs: FilesystemConnector, report: ScanReport) -> dict[str, SourceItem]:
    """Scan and load every candidate, as a sync does, within 20 s (a FIFO read would block)."""
    def run() -> dict[str, SourceItem]:
        items = {}
        for candidate in list(fs.scan(report)):
            item = candidate.load()
            if item is not None:
                items[candidate.source_id] = item
        return items

    return within(20, run, on_timeout=lambda: unblock_fifos(fs.root))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Ok\n\nan ordinary note\n")
    return folder


def test_fifos_sockets_and_devices_named_like_notes_are_skipped_by_name(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    make_socket(root / "sock.md")
    devices = 1 if make_device(root / "null.md") else 0  # a /dev/null twin: read, it would be an empty note
    report = ScanReport()
    assert set(read_all(connector(root), report)) == {"ok.md"}
    assert report.skipped["not_a_regular_file"] == 2 + devices
    assert ("pipe.md", "not_a_regular_file") in report.named and ("sock.md", "not_a_regular_file") in report.named


def test_a_device_twin_of_dev_zero_is_never_read(root: Path) -> None:
    if not make_device(root / "z.md", 1, 5):
        pytest.skip("mknod is not allowed here: no device node can be made")
    report = ScanReport()
    assert set(read_all(connector(root), report)) == {"ok.md"}
    assert report.named == [("z.md", "not_a_regular_file")]


def test_a_file_swapped_for_a_fifo_after_the_scan_is_skipped_not_waited_on(root: Path) -> None:
    fs, report = connector(root), ScanReport()
    candidates = {c.source_id: c for c in fs.scan(report)}
    (root / "ok.md").unlink()
    os.mkfifo(root / "ok.md")
    assert within(10, candidates["ok.md"].load, on_timeout=lambda: unblock_fifos(root)) is None
    assert report.named == [("ok.md", "not_a_regular_file")]


def test_a_file_that_grew_after_the_scan_is_read_no_further_than_max_file_size(root: Path) -> None:
    note = root / "note.md"
    note.write_text("# Small\n\n12 b\n")
    fs, report = connector(root, max_file_size=10_000), ScanReport()
    candidates = {c.source_id: c for c in fs.scan(report)}
    with note.open("a") as out:
        out.write("x" * 180_000)  # appended during the sync
    assert candidates["note.md"].load() is None
    assert report.named == [("note.md", "too_large")]
    assert candidates["ok.md"].load() is not None


def test_files_that_shrink_or_vanish_after_the_scan_are_read_as_they_are_or_skipped(root: Path) -> None:
    (root / "gone.md").write_text("# Gone\n")
    (root / "shrinks.md").write_text("# Long\n\n" + "words " * 1000)
    fs, report = connector(root), ScanReport()
    candidates = {c.source_id: c for c in fs.scan(report)}
    (root / "gone.md").unlink()
    (root / "shrinks.md").write_text("# Short\n")
    assert candidates["gone.md"].load() is None
    item = candidates["shrinks.md"].load()
    assert item is not None and item.title == "Short"
    assert report.named == [("gone.md", "vanished")]
    assert "vanished" not in ERROR_SKIP_REASONS


def test_a_symlink_swapped_in_after_the_scan_is_not_followed_out_of_the_root(root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\noutside the root\n")
    for follow, reason in ((False, "symlink"), (True, "symlink_escape")):
        fs, report = connector(root, follow_symlinks=follow), ScanReport()
        candidates = {c.source_id: c for c in fs.scan(report)}
        (root / "ok.md").unlink()
        (root / "ok.md").symlink_to(secret)
        assert candidates["ok.md"].load() is None
        assert report.named == [("ok.md", reason)]
        (root / "ok.md").unlink()
        (root / "ok.md").write_text("# Ok\n")


def test_a_gitignore_that_is_a_fifo_is_a_named_skip_and_its_folder_is_still_read(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.md").write_text("# A\n")
    os.mkfifo(root / "sub" / ".gitignore")
    os.mkfifo(root / ".gitignore")
    report = ScanReport()
    assert set(read_all(connector(root), report)) == {"ok.md", "sub/a.md"}
    assert sorted(report.named) == [(".gitignore", "not_a_regular_file"), ("sub/.gitignore", "not_a_regular_file")]


def test_a_folder_that_vanishes_between_its_listing_and_its_walk_is_a_named_skip(root: Path) -> None:
    (root / "zz").mkdir()
    (root / "zz" / "x.md").write_text("# X\n")
    fs, report = connector(root), ScanReport()
    scan = fs.scan(report)
    first = next(scan)  # the root is listed: "zz" waits on the stack, not yet walked
    (root / "zz" / "x.md").unlink()
    (root / "zz").rmdir()
    rest = list(scan)
    assert [c.source_id for c in [first, *rest]] == ["ok.md"]
    assert report.named == [("zz", "vanished")]


def test_a_1000_deep_folder_is_walked_and_its_note_read(root: Path) -> None:
    make_deep(root, 1000)
    try:
        report = ScanReport()
        items = read_all(connector(root), report)
        deep = "d/" * 1000 + "bottom.md"
        assert set(items) == {"ok.md", deep} and items[deep].title == "Bottom"
        assert not report.skipped
    finally:
        remove_deep(root)


def test_a_10000_deep_folder_past_path_max_is_walked_and_its_note_read(root: Path) -> None:
    make_deep(root, 10_000)
    try:
        started = time.perf_counter()
        report = ScanReport()
        items = read_all(connector(root), report)
        seconds = time.perf_counter() - started
        deep = "d/" * 10_000 + "bottom.md"
        assert len(deep) > 4096  # past PATH_MAX: no single open could take it
        assert set(items) == {"ok.md", deep} and "very bottom" in items[deep].body
        assert not report.skipped
        assert seconds < 15, f"a 10,000-deep walk took {seconds:.1f} s"
        started = time.perf_counter()
        found = connector(root).scan_paths([deep], ScanReport())  # the watcher's way in
        assert [c.source_id for c in found.candidates] == [deep] and found.covered == [deep]
        assert time.perf_counter() - started < 10
    finally:
        remove_deep(root)


def test_a_root_that_is_a_symlink_is_walked_even_when_symlinks_inside_are_not_followed(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.md").write_text("# A\n")
    link = root.parent / "link"
    link.symlink_to(root)
    fs = connector(link, follow_symlinks=False)
    assert set(read_all(fs, ScanReport())) == {"ok.md", "sub/a.md"}
    assert [c.source_id for c in fs.scan_paths(["sub/a.md"], ScanReport()).candidates] == ["sub/a.md"]


@pytest.mark.slow  # making 100,000 files takes ~20 s on 2 cores
def test_a_folder_with_100000_empty_files_scans_in_bounded_time_and_memory(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY)
    try:
        for n in range(100_000):
            os.close(os.open(f"n{n:06d}.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        candidates = list(connector(root).scan(ScanReport()))
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(candidates) == 100_001
    assert seconds < 30, f"scanning 100,000 files took {seconds:.1f} s"
    assert peak < 300 * 2**20, f"scanning 100,000 files peaked at {peak / 2**20:.0f} MiB"
