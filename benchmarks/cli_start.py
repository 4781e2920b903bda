"""How fast the command line starts: CPU and wall time of `ctx --version` and of a keyword `ctx search`
on the bundled sample knowledge base (issue 41's targets: <= 0.15 s and <= 0.6 s of CPU).

    python benchmarks/cli_start.py [--runs 7] [--no-embed]

Indexes the sample (the docs shipped in the package) into a scratch workspace once (with embeddings,
as `ctx demo` leaves it, unless --no-embed), then runs each command --runs times as a subprocess of
this interpreter's `ctx` and prints the medians as JSON. CPU is the children's user + system time, so
a busy machine slows the wall time but not the CPU figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTX = Path(sys.executable).parent / "ctx"
QUERY = "connect claude desktop"


def timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``ctx args``; fails loudly when the command does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(CTX), *args], cwd=cwd, capture_output=True, text=True, env={**os.environ},
                          timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ctx {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def medians(args: list[str], cwd: Path, runs: int) -> dict[str, float]:
    samples = [timed(args, cwd) for _ in range(runs)]
    return {"cpu_s": round(statistics.median(c for c, _ in samples), 3),
            "wall_s": round(statistics.median(w for _, w in samples), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-embed", action="store_true", help="index keyword-only (faster set-up)")
    options = parser.parse_args()
    from context_harness.sample import DOCS

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        embedding = '[embedding]\nprovider = "disabled"\n' if options.no_embed else ""
        (folder / "ctx.toml").write_text(f'[db]\npath = "{(folder / "data" / "ctx.sqlite").as_posix()}"\n'
                                         f'[connectors.filesystem.sample]\nroot = "{DOCS.as_posix()}"\n{embedding}',
                                         encoding="utf-8")
        timed(["--config", "ctx.toml", "sync", "--progress", "none"], folder)
        figures = {
            "version": medians(["--version"], folder, options.runs),
            "keyword_search": medians(["--config", "ctx.toml", "search", "--mode", "keyword", QUERY], folder,
                                      options.runs),
            "help": medians(["--help"], folder, options.runs),
        }
    print(json.dumps({"runs": options.runs, "embedded": not options.no_embed, **figures,
                      "targets": {"version_cpu_s": 0.15, "keyword_search_cpu_s": 0.6}}, indent=2))


if __name__ == "__main__":
    main()
