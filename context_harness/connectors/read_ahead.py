"""Fetching a network source's items ahead of the sync that loads them, a few at once.

The sync loads changed items one after the other; against a remote store each load waits a round
trip. A connector that is ``Prefetching`` is told, before loading starts, which items the sync will
load and in which order; ``ReadAhead`` then keeps up to ``WINDOW`` of them in flight or fetched
(``WORKERS`` requests at once), so only items the sync will load are ever fetched: an unchanged
source fetches nothing. A load of an item not announced is fetched there and then.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

WINDOW = 16  # items fetched ahead of the sync at most (memory: WINDOW items)
WORKERS = 8  # requests at once

T = TypeVar("T")


class ReadAhead(Generic[T]):
    """``get(item)`` for the announced items, in order, up to ``WINDOW`` ahead of the loads.
    Used from one thread (the sync's); ``get`` runs in worker threads and must be thread-safe."""

    def __init__(self, get: Callable[[str], T]) -> None:
        self._get = get
        self._pool: ThreadPoolExecutor | None = None
        self._queue: list[str] = []  # announced, not yet started
        self._next = 0  # the first of ``_queue`` not started
        self._position: dict[str, int] = {}
        self._ahead: dict[str, Future[T]] = {}

    def announce(self, items: list[str]) -> None:
        """The items the sync will load, in order; anything announced before is dropped."""
        self.stop()
        if len(items) > 1:  # one item gains nothing from a thread
            self._queue, self._next = list(items), 0
            self._position = {item: index for index, item in enumerate(items)}
            self._fill()

    def take(self, item: str) -> T:
        """``get(item)``: fetched ahead when announced (its exception re-raised), else now. Items
        announced before it that were not loaded (the sync passed them by) are dropped."""
        position = self._position.get(item)
        future = self._ahead.pop(item, None)
        if position is not None:
            for earlier in [i for i in self._ahead if self._position[i] < position]:
                self._ahead.pop(earlier).cancel()
            self._next = max(self._next, position + 1)
        try:
            return future.result() if future is not None else self._get(item)
        finally:
            self._fill()

    def _fill(self) -> None:
        while self._next < len(self._queue) and len(self._ahead) < WINDOW:
            item = self._queue[self._next]
            self._next += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="read-ahead")
            self._ahead[item] = self._pool.submit(self._get, item)
        if not self._ahead and self._next >= len(self._queue):
            self.stop()  # all taken: no idle threads are left behind

    def stop(self) -> None:
        """Forget the announced items; cancel what has not started."""
        for future in self._ahead.values():
            future.cancel()
        self._ahead.clear()
        self._queue, self._next, self._position = [], 0, {}
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
