"""numpy's OpenBLAS threads must not spin between searches (``context_harness/__init__.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

# CPU seconds spent over 20 matrix products the size of a SciFact vector top-k, 10 ms apart (a
# server between searches): the products take a few ms of CPU; spinning threads add ~0.2 s.
SCRIPT = """
import resource, time
import context_harness
import numpy as np
m = np.random.default_rng(0).standard_normal((384, 20000), dtype=np.float32)
q = np.ones(384, np.float32)
q @ m
before = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(20):
    q @ m
    time.sleep(0.01)
after = resource.getrusage(resource.RUSAGE_SELF)
print(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
"""


def _openblas() -> bool:
    try:
        config = np.show_config(mode="dicts")
    except TypeError:  # numpy < 1.26
        return False
    return "openblas" in str(config.get("Build Dependencies", {}).get("blas", {}).get("name", "")).lower()


def _cpu_seconds(timeout: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if timeout is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = timeout
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


@pytest.mark.skipif(not _openblas(), reason="numpy here does not use OpenBLAS")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS runs single-threaded on one CPU: nothing spins")
def test_importing_the_package_stops_openblas_threads_spinning_between_products() -> None:
    ours = _cpu_seconds(None)  # the package sets the timeout when imported before numpy
    spinning = _cpu_seconds("28")  # OpenBLAS's default, set by the user: theirs wins
    assert ours < 0.5 * spinning, (ours, spinning)
