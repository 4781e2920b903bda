"""The hostile-folder battery's figures: per kind of hostile folder, how long ``ctx sync`` takes and
its peak RSS, then how a watching stdio server over it fares.

    .venv/bin/python benchmarks/hostile_folders.py [--kinds fifos,deep,...] [--trials 3]

Kinds (``tests/support/hostile_folders.py``): fifos, sockets, devices (a ``/dev/zero`` twin; only
where ``mknod`` is allowed), names, symlinks, unreadable, deep (10,000 levels), many (100,000
empty files), churn (symlinks swapped, files growing, shrinking and vanishing, permissions
flipped while ``ctx sync`` runs). For each, in a fresh temp workspace:

- ``sync_s``, ``sync_rc``, ``sync_peak_rss_mb``: ``ctx sync`` (``wait4``'s peak RSS of that process);
- ``indexed``: every ordinary note stored (``missing`` lists the first few that are not);
- ``serve_settle_s``: ``python -m context_harness`` (stdio, MCP SDK client, watching) started over
  the synced workspace until ``sources`` says it is not syncing;
- ``fresh_p50_s``/``fresh_max_s``: a note saved while it serves -> found by a keyword search, over
  ``--trials`` notes (``null`` when one was not found within 10 s);
- ``serve_peak_rss_mb``: the server's VmHWM.

Commands run as the disk-fault battery runs them: as root, through ``setpriv`` without the
capabilities that override file permissions. Prints one JSON object; each command gives up after
90 s and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]  # mcp.py shadows the SDK
sys.path.insert(0, str(REPO / "tests"))

import pytest  # noqa: E402  (the tree builders skip a kind the machine cannot make with pytest.skip)
from mcp import Client, StdioServerParameters  # noqa: E402

from support.hostile_folders import (  # noqa: E402
    BUILDERS,
    MAX_FILE_SIZE,
    Churn,
    build,
    ctx,
    missing,
    peak_rss_mb,
    run_measured,
    serving_pid,
    unprivileged,
)

LIMIT = 90.0


def write_config(root: Path) -> Path:
    config = root / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                      "[server]\nsync_on_start = true\nwatch = true\n"
                      f'[connectors.filesystem.notes]\nroot = "docs"\nmax_file_size = {MAX_FILE_SIZE}\n')
    return config


async def serve(config: Path, prefix: list[str], env: dict[str, str], docs: Path, trials: int) -> dict[str, Any]:
    head, *rest = [*prefix, *ctx("--config", str(config))]
    out: dict[str, Any] = {}
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=head, args=rest, env=env)) as client:
        pid = serving_pid(config)
        while time.perf_counter() - started < LIMIT:
            state = (await client.call_tool("sources", {})).structured_content["sources"][0]
            if not state["syncing"] and state.get("sync_passes", 1) >= 1:
                break
            await anyio.sleep(0.1)
        out["serve_settle_s"] = round(time.perf_counter() - started, 2)
        out["watch"] = state.get("watch")
        out["status"] = state.get("status")
        found = []
        for trial in range(trials):
            token = f"freshokapi{trial}x{os.getpid()}"
            written = time.perf_counter()
            (docs / f"fresh{trial}.md").write_text(f"# Fresh\n\n{token}\n")
            seconds = None
            while time.perf_counter() - written < 10:
                hits = await client.call_tool("search", {"query": token, "mode": "keyword", "limit": 3})
                if hits.structured_content["results"]:
                    seconds = round(time.perf_counter() - written, 3)
                    break
                await anyio.sleep(0.02)
            found.append(seconds)
        known = [s for s in found if s is not None]
        out["fresh_p50_s"] = round(statistics.median(known), 3) if len(known) == len(found) else None
        out["fresh_max_s"] = max(known) if len(known) == len(found) else None
        out["serve_peak_rss_mb"] = round(peak_rss_mb(pid), 1)
    return out


def one(kind: str, env: dict[str, str], trials: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"ctx-hostile-{kind}-") as tmp:
        root = Path(tmp)
        try:
            tree = build("names" if kind == "churn" else kind, root / "docs")
        except pytest.skip.Exception as skip:
            return {"skipped": str(skip)}
        churn = Churn(tree) if kind == "churn" else None
        config = write_config(root)
        prefix = unprivileged() if tree.needs_unprivileged else []
        try:
            if churn is not None:
                churn.start()
            done = run_measured([*prefix, *ctx("sync", "--config", str(config))], root, env, LIMIT)
            if churn is not None:
                churn.stop()
                churn = None
                again = run_measured([*prefix, *ctx("sync", "--config", str(config))], root, env, LIMIT)
            out: dict[str, Any] = {"sync_s": round(done.seconds, 2), "sync_rc": done.returncode,
                                   "sync_peak_rss_mb": round(done.peak_rss_mb, 1)}
            if kind == "churn":
                out |= {"second_sync_s": round(again.seconds, 2), "second_sync_rc": again.returncode}
            lost = missing(tree, root / "data" / "ctx.sqlite")
            out |= {"indexed": not lost, "missing": lost[:3]}
            out |= anyio.run(serve, config, prefix, env, tree.root, trials)
            return out
        finally:
            if churn is not None:
                churn.stop()
            tree.remove()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kinds", default=",".join([*sorted(BUILDERS), "churn"]))
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    figures = {kind: one(kind, env, args.trials) for kind in args.kinds.split(",")}
    print(json.dumps({"cores": len(os.sched_getaffinity(0)), "load_avg_1m": round(os.getloadavg()[0], 2),
                      "cases": figures}))


if __name__ == "__main__":
    main()
