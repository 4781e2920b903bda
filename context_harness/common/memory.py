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


_libc: ctypes.CDLL | None | bool = None  # loaded on first use; False where there is no glibc


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                if hasattr(libc, "malloc_trim"):
                    _libc = libc
            except OSError:
                pass
    return _libc if isinstance(_libc, ctypes.CDLL) else None


def release_free_memory() -> bool:
    """Give the free pages of every malloc arena back to the system (glibc ``malloc_trim``). A keyword
    index commit allocates and frees tens of MB (Tantivy's indexing buffers); freed in the middle of an
    arena they stayed in the process's RSS, a step of ~20 MB now and then under live updates. Takes
    about a millisecond; False where there is no glibc."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


__all__ = ["limit_malloc_arenas", "release_free_memory"]
