"""Background embedding yields to answers: inside ``priority.background()`` a local model embeds on
threads niced to ``BACKGROUND_NICE`` with at most ``background_workers()`` sessions, gives the same
vectors as in the foreground, and leaves the calling thread's priority alone."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import anyio
import numpy as np
import pytest

from context_harness.config import EmbeddingConfig
from context_harness.embedding import priority
from context_harness.embedding.local import LocalEmbedder

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux's")


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def thread_nices() -> dict[int, int]:
    """Nice value of every thread of this process (``/proc/self/task``)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            out[int(task.name)] = nice_of(int(task.name))
        except OSError:  # the thread ended meanwhile
            pass
    return out


@linux_only
def test_run_lowered_nices_its_thread_and_those_it_starts_not_the_caller() -> None:
    before = nice_of(threading.get_native_id())
    seen: dict[str, int] = {}

    def work() -> int:
        seen["worker"] = nice_of(threading.get_native_id())
        child = threading.Thread(target=lambda: seen.__setitem__("child", nice_of(threading.get_native_id())))
        child.start()
        child.join()
        return 7

    assert priority.run_lowered(work) == 7
    assert seen == {"worker": max(before, priority.BACKGROUND_NICE), "child": max(before, priority.BACKGROUND_NICE)}
    assert nice_of(threading.get_native_id()) == before


def test_run_lowered_reraises_in_the_caller() -> None:
    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        priority.run_lowered(fail)


def test_background_flag_reaches_anyio_worker_threads() -> None:
    async def main() -> tuple[bool, bool]:
        with priority.background():
            inside = await anyio.to_thread.run_sync(priority.in_background)
        outside = await anyio.to_thread.run_sync(priority.in_background)
        return inside, outside

    assert anyio.run(main) == (True, False)


@linux_only
def test_background_embedding_runs_lowered_on_fewer_sessions_with_the_same_vectors(model_cache: Path) -> None:
    embedder = LocalEmbedder(EmbeddingConfig(threads=2), cache_dir=model_cache)
    texts = [f"note {i} about lighthouses, glaciers and sourdough bread number {i}" for i in range(48)]
    foreground = embedder.embed_documents(texts)
    assert len(embedder.document_runner().sessions) == 2

    samples: list[dict[int, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(thread_nices())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with priority.background():
            behind = embedder.embed_documents(texts * 4)
    finally:
        done.set()
        sampler.join()
    np.testing.assert_allclose(behind[:len(texts)], foreground, atol=1e-5)
    assert any(priority.BACKGROUND_NICE in nices.values() for nices in samples), "no thread ran lowered"
    assert nice_of(threading.get_native_id()) == 0, "the caller's thread keeps its priority"
    # Gone once they have exited: a joined thread's task can linger in /proc for a moment.
    deadline = time.monotonic() + 5
    while priority.BACKGROUND_NICE in thread_nices().values() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert priority.BACKGROUND_NICE not in thread_nices().values(), "the lowered threads are gone"
    workers = priority.background_workers()
    assert workers == max(1, priority.cores() // 2)
    assert len(embedder.document_runner(workers).sessions) == min(2, workers)


FIRST_EMBEDDING_IN_BACKGROUND = """
import os, sys, time
from pathlib import Path
from context_harness.config import EmbeddingConfig
from context_harness.embedding import priority
from context_harness.embedding.local import LocalEmbedder

embedder = LocalEmbedder(EmbeddingConfig(threads=2), cache_dir=Path(sys.argv[1]))
with priority.background():
    embedder.embed_documents([f"note {i} about lighthouses" for i in range(64)])
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    nices = [os.getpriority(os.PRIO_PROCESS, int(task.name)) for task in Path("/proc/self/task").iterdir()]
    if priority.BACKGROUND_NICE not in nices:
        break
    time.sleep(0.05)
print(sorted(nices))
"""


@linux_only
def test_a_process_whose_first_embedding_is_background_keeps_no_lowered_threads(model_cache: Path) -> None:
    """The model's sessions and the tokenizer's thread pool outlive the call: started on the lowered
    thread, they kept nice 10 for the life of the process (and later foreground work ran on them)."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", FIRST_EMBEDDING_IN_BACKGROUND, str(model_cache)],
                          capture_output=True, text=True, timeout=120, check=True)
    nices = done.stdout.strip()
    assert str(priority.BACKGROUND_NICE) not in nices.strip("[]").split(", "), nices
