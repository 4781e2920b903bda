"""The workspace writer lock across real processes: exclusive, names its holder to a waiting writer,
freed by the OS when the holder dies; a Harness opening while another process writes neither waits
nor flushes that writer's queue."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from context_harness.core.harness import Harness
from context_harness.errors import StoreBusy
from context_harness.models import SearchRequest
from context_harness.store.documents import DocumentStore
from context_harness.store.writer_lock import WriterLock

pytestmark = pytest.mark.anyio

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from context_harness.store.writer_lock import WriterLock

    with WriterLock(Path(sys.argv[1]), "the test data").hold("test hold"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


@contextmanager
def hold_in_child(path: Path, seconds: float = 60) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the lock at ``path`` (entered once it holds it; killed at the end)."""
    with subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE,
                          text=True) as child:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        try:
            yield child
        finally:
            child.kill()  # SIGKILL: the OS releases the lock of a dead holder
            child.wait()


def test_a_waiting_writer_names_the_holder_once_then_gives_up(tmp_path: Path, caplog) -> None:
    path = tmp_path / "writer.lock"
    with hold_in_child(path) as child:
        lock = WriterLock(path, "the documents")
        assert not lock.try_acquire("sync all")
        assert lock.holder().startswith(f"test hold (pid {child.pid}: ")
        caplog.set_level(logging.WARNING, "context_harness.store.writer_lock")
        started = time.monotonic()
        with pytest.raises(StoreBusy) as raised, lock.hold("sync all", wait=0.5):
            pass
        assert 0.5 <= time.monotonic() - started < 5
        assert f"test hold (pid {child.pid}" in raised.value.message and "the documents" in raised.value.message
        waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
        assert waits == [f"sync all: waiting for {lock.holder()} to finish writing the documents"]
    with lock.hold("sync all", wait=5):
        assert lock.held and lock.holder() == f"this process (pid {os.getpid()})"
    assert not lock.held and path.read_text() == ""


def test_a_second_writer_waits_for_the_first_to_finish(tmp_path: Path) -> None:
    path = tmp_path / "writer.lock"
    with hold_in_child(path, seconds=0.8) as child:
        started = time.monotonic()
        with WriterLock(path, "the documents").hold("sync all", wait=30):
            waited = time.monotonic() - started
        assert child.wait(10) == 0
    assert 0.3 < waited < 10


def test_threads_of_one_process_take_turns(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "writer.lock", "the documents")
    assert lock.try_acquire("first")
    other: list[bool] = []
    thread = threading.Thread(target=lambda: other.append(lock.try_acquire("second")))
    thread.start()
    thread.join()
    assert other == [False]
    released = threading.Thread(target=lock.release)  # released by another thread than took it: allowed
    released.start()
    released.join()
    assert lock.try_acquire("third")
    lock.release()


async def test_opening_while_another_process_writes_neither_waits_nor_flushes(sample_docs) -> None:
    config = sample_docs.config()
    async with Harness.open(config) as h:
        await h.sync()
    DocumentStore(config.db.path).enqueue_all()  # as in the middle of another process's sync
    with hold_in_child(config.db.path.parent / "writer.lock"):
        started = time.monotonic()
        async with Harness.open(config) as h:
            assert time.monotonic() - started < 5
            assert h.store is not None and len(h.store.queued()) == 3  # left to the writer at work
            hits = (await h.search(SearchRequest(query="tantivy"))).results
            assert [hit.title for hit in hits] == ["Search Engines"]
    async with Harness.open(config) as h:  # no other writer now: the queue is flushed at open
        assert h.store is not None and h.store.queued() == []
