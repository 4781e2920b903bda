"""Work run on a helper thread while the calling thread waits outside Python.

A hybrid search embeds its query (ONNX Runtime or an HTTP call, both outside the GIL) and ranks
BM25 (Tantivy plus Python). A ``HelperThreadJob`` lets the second run on a helper thread during the
first.

One scheduling detail decides whether that pays. Linux tends to wake a helper on the CPU of the
thread that woke it, expecting the waker to sleep; here the waker goes on computing, and the two
take turns on one core while the other idles. A helper that finds itself on its caller's CPU
therefore moves to another allowed CPU for the job (measured on 2 cores: ~0.9 ms saved per hybrid
search; without the move, about half the searches saved nothing).

Under concurrent searches the CPUs are busy anyway: a helper then does only the work asked of it,
no extras, and a job still queued when its caller needs it runs on the caller instead.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

MAX_HELPERS = 4


class HelperThreadJob:
    """``work`` for a helper thread, started by ``start`` (at most once); ``result`` waits for it, or
    runs it on the calling thread when it was never started or still waits behind busy helpers.
    ``work`` is told whether spare CPU time may go to likely-useful extras: True on a helper that
    no other helper job competes with for the CPUs, False otherwise (always on the calling thread)."""

    def __init__(self, work: Callable[[bool], Any]) -> None:
        self.work = work
        self.future: Future[Any] | None = None

    def start(self) -> None:
        if self.future is None and _cpus() > 1:  # on one CPU the two would only take turns
            self.future = _pool().submit(_away_from, _cpu(), self.work)

    def result(self) -> Any:
        if self.future is None:
            return self.work(False)
        if _RUNNING >= MAX_HELPERS and self.future.cancel():  # queued behind other searches' helpers
            return self.work(False)
        return self.future.result()


def _away_from(cpu: int, work: Callable[[bool], Any]) -> Any:
    """Run ``work``, first leaving ``cpu`` (the caller's) when the scheduler put this thread there."""
    global _RUNNING
    allowed: set[int] | None = None
    if cpu >= 0 and _cpu() == cpu:
        try:
            allowed = os.sched_getaffinity(0)
            if len(allowed) > 1:
                os.sched_setaffinity(0, allowed - {cpu})
            else:
                allowed = None
        except OSError:
            allowed = None
    with _LOCK:
        _RUNNING += 1
        spare = _RUNNING < _cpus()  # this job plus the callers' own work still leave a CPU
    try:
        return work(spare)
    finally:
        with _LOCK:
            _RUNNING -= 1
        if allowed is not None:
            try:
                os.sched_setaffinity(0, allowed)
            except OSError:
                pass


_POOL: ThreadPoolExecutor | None = None
_CPUS: int | None = None
_RUNNING = 0  # helper jobs running now
_LOCK = threading.Lock()
_GETCPU: Callable[[], int] | None | bool = False  # False: not looked up yet; None: unavailable


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        with _LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max_workers=MAX_HELPERS, thread_name_prefix="ctx-search-helper")
    return _POOL


def _cpus() -> int:
    """How many CPUs this process may run on (looked up once)."""
    global _CPUS
    if _CPUS is None:
        try:
            _CPUS = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            _CPUS = os.cpu_count() or 1
    return _CPUS


def _cpu() -> int:
    """The CPU this thread runs on, or -1 where that cannot be asked (only Linux is asked)."""
    global _GETCPU
    if _GETCPU is False:
        _GETCPU = _find_getcpu()
    return _GETCPU() if callable(_GETCPU) else -1


def _find_getcpu() -> Callable[[], int] | None:
    if not sys.platform.startswith("linux") or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import ctypes

        getcpu = ctypes.CDLL(None).sched_getcpu
        getcpu.restype, getcpu.argtypes = ctypes.c_int, []
        return getcpu if getcpu() >= 0 else None
    except (OSError, AttributeError):
        return None


__all__ = ["HelperThreadJob"]
