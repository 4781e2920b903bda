"""Many workspaces in one server (issue 52): memory and start-up, and how results merge across them.

    .venv/bin/python benchmarks/workspaces.py [--counts 1,3,10] [--docs 30]
    .venv/bin/python benchmarks/workspaces.py --merge [--split 3 | --sizes 70,20,10]

Default (memory): writes ``max(counts)`` small workspaces (``--docs`` notes each, the bundled model,
synced and embedded in this process first), then for each count spawns ``context-harness
--workspaces FILE`` over that many, writes ``initialize`` + ``tools/list`` as raw JSON-RPC lines and
times spawn -> the ``tools/list`` answer (start-up: the median of ``--starts`` spawns), then runs
one hybrid ``search`` across all of them (every workspace embeds the query: the model loads) and
reads the server's resident memory (``/proc/PID/status`` VmRSS, VmHWM). Also the same for one workspace served alone
(``--config``), the single-workspace figure a user compares with. Target: RSS with 3 workspaces
<= 1.3x one workspace's (the model loaded once, not per workspace).

``--merge``: BEIR SciFact (../shared/data/beir/scifact) split round-robin into ``--split`` workspaces
(or into uneven runs, ``--sizes`` percent each; ``--mode hybrid``: its ~1,000-document gate subset, embedded),
keyword search of each test query in each workspace (limit 10), merged three ways
(``core/routing.merge``: per-workspace normalised scores, interleaving, raw scores), scored by nDCG@10
and recall@10 against the qrels, beside the same queries over one workspace holding everything.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact

BIN = Path(sys.executable).parent
HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
]
SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "search", "arguments": {"query": "how do the notes rotate the pager", "mode": "hybrid"}}}
TOPICS = ["release", "pager", "garden", "invoice", "backup", "onboarding", "database", "travel", "budget", "kernel"]


def write_workspace(root: Path, index: int, docs: int) -> Path:
    notes = root / "notes"
    notes.mkdir(parents=True)
    for i in range(docs):
        topic = TOPICS[(index + i) % len(TOPICS)]
        (notes / f"{topic}-{i}.md").write_text(
            f"# {topic.title()} note {i} of workspace {index}\n\nThe {topic} notes say how the team handles the "
            f"{topic}: who owns it, when it rotates, and what to check first ({i}).\n", encoding="utf-8")
    config = root / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[server]\nsync_on_start = false\n'
                      '[connectors.filesystem.notes]\nroot = "notes"\n', encoding="utf-8")
    return config


async def sync_all(configs: list[Path]) -> None:
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness

    for path in configs:
        async with Harness.open(config_mod.load_file(path)) as harness:
            await harness.sync()


def rpc(process: subprocess.Popen[bytes], wanted: int) -> dict[str, Any]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        message = json.loads(line)
        if message.get("id") == wanted:
            return message


def memory(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": fields["VmRSS"], "peak_rss_mb": fields["VmHWM"]}


def spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], float, int]:
    """``context-harness *args`` through ``tools/list``: the process, seconds to the answer, tools listed."""
    start = time.perf_counter()
    process = subprocess.Popen([str(BIN / "context-harness"), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=env)
    assert process.stdin is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in HANDSHAKE))
    process.stdin.flush()
    tools = rpc(process, 1)["result"]["tools"]
    return process, time.perf_counter() - start, len(tools)


def close(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


def measure(args: list[str], env: dict[str, str], starts: int) -> dict[str, Any]:
    """Start-up (median of ``starts`` spawns) to the tools/list answer, then RSS after a hybrid search."""
    times = []
    for _ in range(starts):
        process, seconds, _ = spawn(args, env)
        close(process)
        times.append(seconds)
    process, _, tools = spawn(args, env)
    assert process.stdin is not None
    try:
        before = memory(process.pid)
        process.stdin.write(json.dumps(SEARCH).encode() + b"\n")
        process.stdin.flush()
        begun = time.perf_counter()
        answer = rpc(process, 2)["result"]
        first_search = time.perf_counter() - begun
        hits = answer["structuredContent"]["results"]
        after = memory(process.pid)
    finally:
        close(process)
    return {"startup_s": round(statistics.median(times), 3), "first_hybrid_search_s": round(first_search, 3),
            "rss_before_search_mb": before["rss_mb"], **after, "tools": tools,
            "workspaces_in_results": sorted({h.get("workspace", "-") for h in hits})}


def memory_figures(counts: list[int], docs: int, starts: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        configs = [write_workspace(root / f"w{i}", i, docs) for i in range(max(counts))]
        began = time.perf_counter()
        anyio.run(sync_all, configs)
        synced = time.perf_counter() - began
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        out: dict[str, Any] = {"docs_per_workspace": docs, "sync_all_s": round(synced, 1), "cores": os.cpu_count()}
        out["single_config"] = measure(["--config", str(configs[0])], env, starts)
        for count in counts:
            file = root / f"workspaces-{count}.toml"
            file.write_text("".join(f'[workspaces.w{i}]\nconfig = "{configs[i]}"\n' for i in range(count)),
                            encoding="utf-8")
            out[f"workspaces_{count}"] = measure(["--workspaces", str(file)], env, starts)
    base = out.get("workspaces_1", out["single_config"])["rss_mb"]
    for count in counts:
        out[f"rss_ratio_{count}_to_1"] = round(out[f"workspaces_{count}"]["rss_mb"] / base, 3)
    return out


# -- merging ---------------------------------------------------------------------------------------

def split_corpus(docs: list[dict], split: int, sizes: list[int] | None) -> list[list[dict]]:
    """Round-robin into ``split`` parts, or contiguous runs of ``sizes`` percent (uneven workspaces)."""
    if not sizes:
        return [docs[i::split] for i in range(split)]
    parts, start = [], 0
    for i, size in enumerate(sizes):
        end = len(docs) if i == len(sizes) - 1 else start + len(docs) * size // 100
        parts.append(docs[start:end])
        start = end
    return parts


async def merge_figures(split: int, sizes: list[int] | None = None, mode: str = "keyword") -> dict[str, Any]:
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness
    from context_harness.core.routing import merge

    docs = scifact.corpus() if mode == "keyword" else scifact.gate_subset()  # hybrid: embed ~1,000, not 5,183
    queries = scifact.queries()
    judged = {q: r for q, r in scifact.qrels("test").items() if q in queries}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def workspace(name: str, part: list[dict]) -> Path:
            scifact.write_markdown(part, root / name / "docs")
            path = root / name / "ctx.toml"
            embedding = "disabled" if mode == "keyword" else "local"
            path.write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "{embedding}"\n'
                            '[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
            return path

        parts = [workspace(f"part{i}", part) for i, part in enumerate(split_corpus(docs, split, sizes))]
        whole = workspace("whole", docs)
        runs: dict[str, list[list[str]]] = {"one_workspace": [], "normalised": [], "interleaved": [], "raw": []}
        harnesses = []
        async with Harness.open(config_mod.load_file(whole)) as one:
            await one.sync()
            for qid in judged:
                payload = (await one.call_tool("search", {"query": queries[qid], "limit": 10, "mode": mode})).payload
                runs["one_workspace"].append([r["source_id"].removesuffix(".md") for r in payload["results"]])
        for path in parts:
            harness = Harness.open(config_mod.load_file(path))
            harnesses.append((harness, await harness.__aenter__()))
        try:
            for _, h in harnesses:
                await h.sync()
            for qid in judged:
                lists = [(f"part{i}", (await h.call_tool("search", {"query": queries[qid], "limit": 10, "mode": mode}))
                          .payload["results"]) for i, (_, h) in enumerate(harnesses)]
                for how in ("normalised", "interleaved", "raw"):
                    runs[how].append([r["source_id"].removesuffix(".md") for r in merge(lists, 10, how)])
        finally:
            for context, _ in harnesses:
                await context.__aexit__(None, None, None)
    rels = list(judged.values())
    return {"corpus": "scifact", "documents": len(docs), "queries": len(rels), "workspaces": len(parts),
            "sizes_percent": sizes or "round-robin", "mode": mode,
            **{how: {"ndcg@10": round(sum(scifact.ndcg_at(r, q) for r, q in zip(ranked, rels, strict=True))
                                      / len(rels), 4),
                     "recall@10": round(sum(scifact.recall_at(r, q, 10) for r, q in zip(ranked, rels, strict=True))
                                        / len(rels), 4)}
               for how, ranked in runs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,3,10")
    parser.add_argument("--docs", type=int, default=30)
    parser.add_argument("--starts", type=int, default=3, help="spawns timed per figure (the median is kept)")
    parser.add_argument("--merge", action="store_true")
    parser.add_argument("--split", type=int, default=3)
    parser.add_argument("--sizes", default=None, help="percent per workspace, e.g. 70,20,10 (default: even)")
    parser.add_argument("--mode", choices=["keyword", "hybrid"], default="keyword",
                        help="hybrid: the ~1,000-document gate subset, embedded with the bundled model")
    args = parser.parse_args()
    if args.merge:
        scifact.require_scifact()
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
        print(json.dumps(anyio.run(merge_figures, args.split, sizes, args.mode)))
    else:
        print(json.dumps(memory_figures([int(c) for c in args.counts.split(",")], args.docs, args.starts)))


if __name__ == "__main__":
    main()
