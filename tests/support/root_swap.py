"""A second process that keeps swapping a folder for a symlink to another folder and back, for the
root-swap batteries (``tests/notes/test_root_swap.py``: the note tools; ``tests/connectors/
test_root_swap_sync.py``: syncs).

``start_flipper(root, outside, seed, pause, hold)`` starts it and returns once it is ready: between
swaps it waits up to ``pause`` seconds, and holds the symlink up to ``hold`` seconds. It stops when
``ROOT-stop`` exists; ``stop_flipper(proc, root)`` makes that file and returns how many swaps it made.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FLIPPER = r"""
import os, random, sys, time
root, outside = sys.argv[1], sys.argv[2]
rng, pause, hold = random.Random(int(sys.argv[3])), float(sys.argv[4]), float(sys.argv[5])
real, stop, flips = root + "-real", root + "-stop", 0
print("ready", flush=True)
while not os.path.exists(stop):
    time.sleep(rng.uniform(0, pause))
    try:  # the root becomes a symlink to the outside folder, then comes back
        os.rename(root, real)
        os.symlink(outside, root)
        flips += 1
        time.sleep(rng.uniform(0, hold))
        os.unlink(root)
        os.rename(real, root)
    except OSError as exc:
        print("flip failed:", exc, file=sys.stderr, flush=True)
print(flips, flush=True)
"""


def start_flipper(root: Path, outside: Path, seed: int, pause: float, hold: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(root), str(outside), str(seed), str(pause), str(hold)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


__all__ = ["FLIPPER", "start_flipper"]
