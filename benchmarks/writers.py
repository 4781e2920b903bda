"""Several processes on one workspace: how soon a reading process sees another process's commits.

    python benchmarks/writers.py [--docs 2000] [--trials 20]

A reader (this process: an open Harness, as a server holds it) searches in a loop while a writer
(a second process, this script with ``--writer``) adds one new document per trial: a sync without
embeddings, then an embed. The writer prints the wall-clock time of each commit (after the call
returned); the reader notes when a keyword search, then a semantic search, first finds the
document. Embeddings come from the deterministic hashing embedder of the tests (``fake``): when a
commit shows does not depend on the model (``tests/e2e/test_writers.py`` checks the same with the
bundled one). Also: the reader's keyword search p50 while nothing changes, and what the checks for
other processes' commits cost when a search makes them. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.embedding import fake  # noqa: E402
from context_harness.models import SearchRequest  # noqa: E402

WORDS = ("river stone maple copper lantern harbor meadow signal orbit candle ledger violet summit "
         "thunder garden mirror falcon canyon").split()


def write_workspace(root: Path, docs: int) -> Path:
    folder = root / "docs"
    folder.mkdir(parents=True)
    for i in range(docs):
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(120))
        (folder / f"doc{i:05d}.md").write_text(f"# Document {i}\n\n{words}\n", encoding="utf-8")
    cfg = root / "ctx.toml"
    # 4096 dims: few hash collisions, so the trial's marker word decides the semantic top hit
    cfg.write_text('[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "fake"\ndims = 4096\n\n'
                   '[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
    return cfg


def marker(trial: int) -> str:
    return f"zyx{trial:03d}quokka"


async def writer(cfg: Path, trials: int) -> None:
    """Per trial: wait for the reader's go line, add a document, sync it, embed it; print commit times."""
    config = config_mod.load_file(cfg)
    async with Harness.open(config) as harness:
        for trial in range(trials):
            sys.stdin.readline()
            (cfg.parent / "docs" / f"new{trial:03d}.md").write_text(
                f"# Trial {trial}\n\n{marker(trial)} appears only here.\n", encoding="utf-8")
            await harness.sync(embed=False)
            synced = time.time()
            await harness.embed()
            print(json.dumps({"synced": synced, "embedded": time.time()}), flush=True)


def seen_at(harness: Harness, trial: int, mode: str, limit: float = 30.0) -> float:
    """When a search first finds trial ``trial``'s document (searching every 2 ms)."""
    deadline = time.time() + limit
    while time.time() < deadline:
        results = harness.search_sync(SearchRequest(query=marker(trial), mode=mode, limit=1)).results
        if results and results[0].title == f"Trial {trial}":
            return time.time()
        time.sleep(0.002)
    raise TimeoutError(f"{mode} search never found trial {trial}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def check_costs(harness: Harness, n: int = 5000) -> dict[str, float]:
    """Microseconds a search spends looking for other processes' commits when it does look (at most
    every 50 ms for keywords, 100 ms for vectors): a stat of meta.json, one SQLite read."""
    assert harness.index is not None and harness.vectors is not None
    index, vectors = harness.index, harness.vectors
    started = time.perf_counter()
    for _ in range(n):
        index.index.searcher()
    plain = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(n):
        index._next_check = 0.0  # force the check every time
        index.searcher()
    checked = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(n):
        vectors.version()
    version = time.perf_counter() - started
    return {"keyword_check_us": round((checked - plain) / n * 1e6, 1), "vector_check_us": round(version / n * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    fake.register()
    if args.writer:
        anyio.run(writer, args.writer, args.trials)
        return
    with tempfile.TemporaryDirectory(prefix="ctx-writers-") as tmp:
        cfg = write_workspace(Path(tmp), args.docs)
        anyio.run(_initial_sync, cfg)
        keyword_ms, semantic_ms, idle_ms = [], [], []
        costs: dict[str, float] = {}
        config = config_mod.load_file(cfg)

        async def read() -> None:
            async with Harness.open(config) as harness:
                harness.search_sync(SearchRequest(query="warm up", mode="semantic"))
                for _ in range(200):
                    started = time.perf_counter()
                    harness.search_sync(SearchRequest(query="copper lantern", mode="keyword"))
                    idle_ms.append((time.perf_counter() - started) * 1000)
                costs.update(check_costs(harness))
                with subprocess.Popen([sys.executable, __file__, "--writer", str(cfg), "--trials", str(args.trials)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
                    assert proc.stdin is not None and proc.stdout is not None
                    for trial in range(args.trials):
                        proc.stdin.write("go\n")
                        proc.stdin.flush()
                        keyword = seen_at(harness, trial, "keyword")
                        semantic = seen_at(harness, trial, "semantic")
                        commits = json.loads(proc.stdout.readline())
                        keyword_ms.append(max(0.0, keyword - commits["synced"]) * 1000)
                        semantic_ms.append(max(0.0, semantic - commits["embedded"]) * 1000)
                    proc.stdin.close()

        anyio.run(read)
    summary = {name: {"p50": round(statistics.median(v), 1), "p95": round(percentile(v, 0.95), 1),
                      "max": round(max(v), 1)} for name, v in (("keyword_visible_ms", keyword_ms),
                                                               ("semantic_visible_ms", semantic_ms))}
    print(json.dumps({"benchmark": "writers", "docs": args.docs, "trials": args.trials, "embedder": "fake:4096",
                      **summary, "idle_keyword_search_p50_ms": round(statistics.median(idle_ms), 2), **costs}))


async def _initial_sync(cfg: Path) -> None:
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        await harness.sync()


if __name__ == "__main__":
    main()
