"""Keeping a long-running process's memory flat.

glibc gives every thread that allocates its own malloc arena (up to eight per core) and keeps what
is freed there for reuse. A server's worker threads, and Tantivy's indexing threads on every live
update, each allocate and free in their own arena, so a server under load with a changing index grew
by ~100 MB in minutes (``benchmarks/load.py``) without holding more data. Two arenas keep it flat at
no measurable cost in speed. Not glibc (macOS, musl): nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt parameter (malloc.h)
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for threads created from now on; True when it applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    applied = bool(mallopt(M_ARENA_MAX, arenas))
    log.debug("malloc arenas capped at %d: %s", arenas, applied)
    return applied


__all__ = ["limit_malloc_arenas"]
