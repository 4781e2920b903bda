"""Background embedding yields to answers.

A serving process (``ctx serve``, ``ctx watch``) embeds new chunks while it answers searches. Run at
full speed, that work took both cores of a 2-core machine and pushed keyword p50 from 13 to 22 ms.
Inside ``background()`` (``Harness.embed_new`` enters it), a local model's document embedding:

- runs in threads of its own, niced to ``BACKGROUND_NICE`` (Linux applies ``setpriority`` to the one
  thread named by its id, and threads started from it inherit the value), so the scheduler serves the
  threads answering requests first; the calling thread (a worker that later answers searches) is
  never reniced, because an unprivileged process cannot lower a nice value again;
- uses at most ``background_workers()`` model sessions: half the cores, at least one, so a core
  stays free for answers and fewer copies of the model sit in memory.

``ctx embed`` and ``ctx sync`` (nobody waiting on answers) run at full speed, as before. Where the
OS cannot renice a thread (not Linux), the work still runs, at normal priority.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Nice value of background embedding threads (0 is normal, 19 the lowest priority).
BACKGROUND_NICE = 10

_background: ContextVar[bool] = ContextVar("ctx_background_embedding", default=False)


@contextmanager
def background() -> Iterator[None]:
    """Embedding started inside this block (and in worker threads it starts: anyio copies the
    context into them) runs at background priority."""
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


def in_background() -> bool:
    return _background.get()


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def background_workers() -> int:
    """Model sessions background embedding may keep busy: half the cores, at least one."""
    return max(1, cores() // 2)


def lower_this_thread() -> bool:
    """Renice the calling thread to ``BACKGROUND_NICE``; False where the OS does not allow it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError) as exc:
        log.debug("background embedding runs at normal priority: %s", exc)
        return False
    return True


def run_lowered(fn: Callable[[], T]) -> T:
    """``fn()`` in a new thread niced to ``BACKGROUND_NICE`` (threads it starts inherit that);
    blocks until it returns, and re-raises its exception here."""
    result: list[T] = []
    errors: list[BaseException] = []

    def work() -> None:
        lower_this_thread()
        try:
            result.append(fn())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=work, name="ctx-embed-background", daemon=True)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


__all__ = ["BACKGROUND_NICE", "background", "background_workers", "cores", "in_background", "lower_this_thread",
           "run_lowered"]
