"""The listing watcher of folders that OS events cannot serve (names that are not UTF-8)."""

from __future__ import annotations

import os
from pathlib import Path

from context_harness.core.polling import ADDED, DELETED, MODIFIED, ListingPoller


def test_a_rewrite_within_one_timestamp_tick_and_a_chmod_are_seen_a_read_is_not(tmp_path: Path) -> None:
    note = tmp_path / "grow.md"
    note.write_bytes(b"x" * 100_000)
    stamp = note.stat()
    poller = ListingPoller([str(tmp_path)], interval=0.0)
    note.read_bytes()
    assert poller.watch(1, 1, 5, None) == "timeout"
    note.write_text("# Small again\n")
    os.utime(note, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the same modification time as before
    assert poller.watch(1, 1, 5, None) == {(MODIFIED, str(note))}
    note.chmod(0)
    assert poller.watch(1, 1, 5, None) == {(MODIFIED, str(note))}


def test_names_that_are_not_utf8_are_reported_as_the_os_names_them(tmp_path: Path) -> None:
    poller = ListingPoller([str(tmp_path)], interval=0.0)
    latin1 = os.fsdecode(bytes(tmp_path) + b"/caf\xe9.md")
    with open(latin1, "w") as out:
        out.write("# Caf\n")
    assert poller.watch(1, 1, 5, None) == {(ADDED, latin1)}
    os.unlink(latin1)
    assert poller.watch(1, 1, 5, None) == {(DELETED, latin1)}


def test_it_lists_no_more_often_than_its_interval_and_stops_when_asked(tmp_path: Path) -> None:
    poller = ListingPoller([str(tmp_path)], interval=60.0)
    (tmp_path / "new.md").write_text("# New\n")
    assert poller.watch(1, 1, 20, None) == "timeout"  # the next listing is a minute away

    class Stop:
        def is_set(self) -> bool:
            return True

    assert poller.watch(1, 1, 20, Stop()) == "stop"
