"""Run ``ctx`` as a user does: ``python -m context_harness`` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_ctx(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``ctx *args`` in ``cwd``; no colour, and no ``CTX_CONFIG`` from the test process."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CTX_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "context_harness", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
