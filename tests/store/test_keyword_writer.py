"""Tantivy's writer lock is given up by a failed write, however long its traceback is kept."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from context_harness.store.keyword import KeywordIndex
from context_harness.store.records import IndexedDocument


def note(i: int, word: str) -> IndexedDocument:
    return IndexedDocument(f"d{i}", f"title {i}", f"a note about {word}", "files:notes", [], None)


def test_a_failed_write_kept_as_an_errors_cause_does_not_hold_the_writer_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = KeywordIndex(tmp_path / "tantivy")
    index.replace([], [note(1, "okapi")])
    kept: list[BaseException] = []  # as a log record or an error's __cause__ keeps it
    try:
        with index.session() as session:
            session.replace([], [note(2, "lost")])
            raise OSError("disk full")
    except OSError as exc:
        kept.append(exc)
    assert kept[0].__traceback__ is not None
    # The next write gets the lock at once (it waited 30 s, then failed as 'locked by another process').
    monkeypatch.setattr(index, "_writer", functools.partial(index._writer, 0.5))
    index.replace([], [note(3, "quokka")])
    assert index.doc_id_counts() == {"d1": 1, "d3": 1}
