"""Waiting for a serving Harness to show a change (the live index's tests)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

LIMIT = 10.0  # seconds any one change may take to show


async def wait_for(check: Callable[[], Awaitable[Any]], what: str, limit: float = LIMIT) -> Any:
    """``check()``'s first true value, asked every 20 ms; fails after ``limit`` seconds naming ``what``."""
    deadline = time.monotonic() + limit
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:g}s: {what}")
        await anyio.sleep(0.02)


async def source_ids(h: Harness, query: str) -> list[str]:
    """The sorted source ids of a keyword search's results."""
    return sorted(r.source_id for r in (await h.search(SearchRequest(query=query, mode="keyword"))).results)
