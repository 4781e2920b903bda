"""context-harness: a local-first knowledge base for AI assistants, served over MCP."""

import os

__version__ = "0.1.0"  # the one place the version lives: hatch reads it at build ([tool.hatch.version])

# OpenBLAS (numpy's BLAS on Linux and Windows wheels) keeps its worker threads spinning for 2**28
# cycles, about 0.1 s, after every matrix product. A vector top-k takes well under a millisecond at
# SciFact size, so each search left a core spinning that the next query embedding needed: ~20 ms of
# CPU per ~10 ms hybrid search (benchmarks/hybrid.py, harness_concurrent). 2**4 cycles lets the
# threads sleep at once. OpenBLAS reads this when numpy loads, so it must be set before that; the
# `ctx` command and `python -m context_harness` import this package first. A value already set wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
