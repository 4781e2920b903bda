"""How fast the command line starts: CPU and wall time of `ctx --version`, and of a keyword and a
hybrid `ctx search` on the bundled sample knowledge base, alone and beside a running `ctx serve --http`
of the same workspace (which answers them over its local socket). Targets: `--version` <= 0.15 s of
CPU (issue 41); a keyword search alone <= 0.6 s of CPU, any search beside a server <= 1 s wall (issue 50).

    python benchmarks/cli_start.py [--runs 7] [--no-embed]

Indexes the sample (the docs shipped in the package) into a scratch workspace once (with embeddings,
as `ctx demo` leaves it, unless --no-embed), then runs each command --runs times as a subprocess of
this interpreter's `ctx` and prints the medians as one JSON line. CPU is the children's user + system
time, so a busy machine slows the wall time more than the CPU figure. The server's own CPU is not
counted (it is already running).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CTX = Path(sys.executable).parent / "ctx"
QUERY = "connect claude desktop"


def timed(args: list[str], cwd: Path, timeout: float = 120) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``ctx args``; fails loudly when the command does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(CTX), *args], cwd=cwd, capture_output=True, text=True, env={**os.environ},
                          timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ctx {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def medians(args: list[str], cwd: Path, runs: int) -> dict[str, float]:
    samples = [timed(args, cwd) for _ in range(runs)]
    return {"cpu_s": round(statistics.median(c for c, _ in samples), 3),
            "wall_s": round(statistics.median(w for _, w in samples), 3)}


@contextmanager
def server(folder: Path) -> Iterator[None]:
    """``ctx serve --http`` of the workspace on 127.0.0.1, until its local socket answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([str(CTX), "--config", "ctx.toml", "serve", "--http", "--bind", f"127.0.0.1:{port}"],
                               cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not answers(folder / "data" / "serving.sock"):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"ctx serve --http did not start: {process.communicate()[1][-500:]}")
            time.sleep(0.2)
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))
            return probe.recv(1) == b"{"
        except OSError:
            return False


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
        timed(["--config", "ctx.toml", "sync", "--progress", "none"], folder, timeout=1800)  # embeds the sample
        modes = ["keyword"] if options.no_embed else ["keyword", "hybrid"]
        searches = {mode: ["--config", "ctx.toml", "search", "--mode", mode, QUERY] for mode in modes}
        figures = {
            "version": medians(["--version"], folder, options.runs),
            "help": medians(["--help"], folder, options.runs),
            **{f"{mode}_search": medians(args, folder, options.runs) for mode, args in searches.items()},
        }
        with server(folder):
            figures.update({f"{mode}_search_beside_server": medians(args, folder, options.runs)
                            for mode, args in searches.items()})
    print(json.dumps({"runs": options.runs, "embedded": not options.no_embed, "cores": os.cpu_count(), **figures,
                      "targets": {"version_cpu_s": 0.15, "keyword_search_cpu_s": 0.6,
                                  "search_beside_server_wall_s": 1.0}}))


if __name__ == "__main__":
    main()
