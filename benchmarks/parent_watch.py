"""What watching for a dead client costs a stdio server (issue 49, ``common/lineage.py``).

Prints one JSON line:
- ``check_us_parent`` / ``check_us_launcher``: CPU microseconds of one ``Lineage.gone()`` check,
  watching the parent only, and through one launcher (its ``/proc`` stat read on Linux);
- ``watch_cpu_s_per_hour``: CPU seconds an hour of a process whose only work is a ``ParentWatch``
  (one check a second) started through a launcher like ``uv``, measured in that process over
  ``--seconds``; ``idle_cpu_s_per_hour`` the same process without the watch, for comparison;
- with ``--server`` (Linux): ``server_watch_cpu_s_per_hour`` / ``server_nowatch_cpu_s_per_hour``, an
  idle ``ctx serve`` over stdio with ``[server] exit_with_parent`` true / false (clock ticks of /proc).

    .venv/bin/python benchmarks/parent_watch.py [--seconds 30] [--server]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from context_harness.common.lineage import Lineage, Process

CHILD = """
import os, sys, time
from context_harness.common.lineage import ParentWatch
watch = ParentWatch(os.getppid(), lambda reason: None).start() if sys.argv[1] == "watch" else None
time.sleep(0.5)  # the lineage is read
began = time.process_time()
time.sleep(float(sys.argv[2]))
print(time.process_time() - began, len(watch.lineage.launchers) if watch and watch.lineage else 0)
"""
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def per_check(lineage: Lineage, n: int = 20_000) -> float:
    began = time.process_time()
    for _ in range(n):
        assert lineage.gone() is None
    return (time.process_time() - began) / n * 1e6


def checks() -> dict[str, float]:
    parent_only = Lineage(os.getppid(), (), "benchmark")
    out = {"check_us_parent": round(per_check(parent_only), 2)}
    if sys.platform.startswith("linux"):
        with subprocess.Popen(["sleep", "60"]) as child:
            started = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
            through = Lineage(os.getppid(), (Process(child.pid, os.getpid(), started, ("uv",)),), "benchmark")
            out["check_us_launcher"] = round(per_check(through), 2)
            child.kill()
    return out


def process_cpu(mode: str, seconds: float, folder: Path) -> tuple[float, int]:
    """CPU seconds the child spent over ``seconds`` (after start) and the launchers it watched through."""
    uv = folder / "uv"
    uv.write_text(f"#!{sys.executable}\n{LAUNCHER}\n", encoding="utf-8")
    uv.chmod(0o755)
    out = subprocess.run([str(uv), sys.executable, "-c", CHILD, mode, str(seconds)], capture_output=True, text=True,
                         timeout=seconds + 60, check=True).stdout.split()
    return float(out[0]), int(out[1])


def server_cpu(watch: bool, seconds: float, folder: Path) -> float:
    """CPU seconds an idle ``ctx serve`` (stdio, one small folder, no watcher) spends over ``seconds``."""
    (folder / "docs").mkdir(exist_ok=True)
    (folder / "docs" / "a.md").write_text("# A\n\nHerons wade.\n", encoding="utf-8")
    (folder / "ctx.toml").write_text(
        f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nwatch = false\n'
        f'exit_with_parent = {"true" if watch else "false"}\n[connectors.filesystem.docs]\nroot = "docs"\n',
        encoding="utf-8")
    ctx = Path(sys.executable).parent / "ctx"
    server = subprocess.Popen([str(ctx), "serve", "--config", "ctx.toml"], cwd=folder, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(5)  # started, synced
        before = _cpu(server.pid)
        time.sleep(seconds)
        return _cpu(server.pid) - before
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--server", action="store_true", help="also an idle `ctx serve`, with and without the watch")
    args = parser.parse_args()
    figures: dict[str, object] = {"cores": os.cpu_count(), "platform": sys.platform, "seconds": args.seconds}
    figures.update(checks())
    with tempfile.TemporaryDirectory() as folder:
        watched, launchers = process_cpu("watch", args.seconds, Path(folder))
        idle, _ = process_cpu("idle", args.seconds, Path(folder))
    hour = 3600 / args.seconds
    figures.update(watch_cpu_s_per_hour=round(watched * hour, 4), idle_cpu_s_per_hour=round(idle * hour, 4),
                   launchers_watched=launchers)
    if args.server and sys.platform.startswith("linux"):
        with tempfile.TemporaryDirectory() as folder:
            figures.update(server_watch_cpu_s_per_hour=round(server_cpu(True, args.seconds, Path(folder)) * hour, 2),
                           server_nowatch_cpu_s_per_hour=round(server_cpu(False, args.seconds, Path(folder)) * hour, 2))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
