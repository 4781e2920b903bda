"""One machine at scale: 100k and 1M-chunk workspaces, searched over MCP stdio.

    python benchmarks/scale.py [--chunks 100000,1000000] [--one-chunk-docs 300000] [--tmp DIR]

Embedding cost is taken out of the picture: the benchmark starts an OpenAI-compatible embeddings
endpoint on 127.0.0.1 (a process of its own) that returns deterministic 384-dim vectors, a sum of
one fixed random vector per word, so texts sharing words are near each other as real embeddings of
related texts are. The workspaces go through the product's own paths: Markdown files, ``sync``
(keyword pass, then embedding through the endpoint), the vector index built and saved, then
``python -m context_harness`` over stdio.

For each ``--chunks`` size (documents of ten one-chunk sections) and for ``--one-chunk-docs``
documents of one chunk each, one JSON object with:

- ``keyword_sync_s`` (files to keyword search ready), ``embed_s``, ``graph_build_s``;
- ``open_s``: server spawn to the first semantic search answered (``handshake_s`` of it is the
  process start to ``tools/list``; the rest opens the saved graph); ``in_process.index_open_s``: the
  vector index opened alone;
- ``rss_mb``: the server's resident memory after the searches;
- ``semantic_ms``/``hybrid_ms`` p50/p99 over MCP stdio (query text in, including the query's round
  trip to the endpoint);
- ``in_process``: semantic top-10 p50 on the index (query vector given) and keyword search p50
  through ``Harness.search``;
- ``recall_at_10``: of the index's semantic top-10 against an exact float32 scan of every stored
  vector; and ``recall_at_10_ties_counted``, where a hit whose exact score equals the exact 10th
  also counts (ann-benchmarks' definition; short queries of common words put many chunks within a
  thousandth of each other at the cut).

Prints one JSON line per workspace, then a summary line. Targets (issue 18) and results are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # benchmarks/mcp.py is not the SDK
sys.path.insert(0, str(_HERE.parent))
_spec = importlib.util.spec_from_file_location("ctx_bench_mcp", _HERE / "mcp.py")
assert _spec is not None and _spec.loader is not None
bench_mcp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_mcp)

DIMS = 384
TABLE_ROWS = 1 << 15
WORDS_PER_CHUNK = 40
SECTIONS = 10
QUERIES = 200
_WORD = re.compile(r"[a-z]+")


# -- the embeddings endpoint (its own process) ------------------------------------------------------

def word_table() -> np.ndarray:
    return np.random.default_rng(1234).standard_normal((TABLE_ROWS, DIMS)).astype(np.float32)


def embed_texts(table: np.ndarray, texts: list[str]) -> np.ndarray:
    """Deterministic vectors: the normalised sum of each word's row (a word's row: crc32 of it)."""
    out = np.zeros((len(texts), DIMS), np.float32)
    for i, text in enumerate(texts):
        rows = [zlib.crc32(w.encode()) & (TABLE_ROWS - 1) for w in _WORD.findall(text.lower())]
        if rows:
            out[i] = table[rows].sum(axis=0)
        else:
            out[i, 0] = 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def serve_embeddings(port_file: Path) -> None:
    table = word_table()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = embed_texts(table, texts)
            as_base64 = body.get("encoding_format") == "base64"
            data = [{"object": "embedding", "index": i,
                     "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if as_base64 else v.tolist()}
                    for i, v in enumerate(vectors)]
            raw = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


@contextlib.contextmanager
def embeddings_endpoint(tmp: Path) -> Iterator[str]:
    port_file = tmp / "endpoint.port"
    port_file.unlink(missing_ok=True)  # a kept folder's port is stale
    proc = subprocess.Popen([sys.executable, __file__, "--serve-embeddings", str(port_file)])
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the embeddings endpoint did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- workspaces -----------------------------------------------------------------------------------

def vocabulary(n: int = 20_000) -> np.ndarray:
    words = []
    for i in range(n):
        letters = ""
        while True:
            i, r = divmod(i, 26)
            letters += chr(97 + r)
            if i == 0:
                break
        words.append("q" + letters)
    return np.array(words)


def write_corpus(folder: Path, chunks: int, sections: int, seed: int = 7) -> list[str]:
    """``chunks / sections`` Markdown files of ``sections`` one-chunk sections of zipf-drawn words;
    returns query texts (3 to 5 words each)."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    folder.mkdir(parents=True, exist_ok=True)
    per_file = sections
    for d in range(chunks // per_file):
        picks = np.minimum(rng.zipf(1.2, size=(per_file, WORDS_PER_CHUNK)) - 1, len(vocab) - 1)
        parts = [" ".join(vocab[row]) for row in picks]
        if sections == 1:
            body = parts[0]
        else:
            body = "\n\n".join(f"## Part {i}\n\n{p}" for i, p in enumerate(parts))
        sub = folder / f"{d // 1000:04d}"
        if d % 1000 == 0:
            sub.mkdir()
        (sub / f"doc{d:07d}.md").write_text(f"# Document {d}\n\n{body}\n", encoding="utf-8")
    queries = np.random.default_rng(seed + 1)  # its own stream: the same queries however many files
    picks = np.minimum(queries.zipf(1.2, size=(QUERIES + 20, 5)) - 1, len(vocab) - 1)
    return [" ".join(vocab[row[: 3 + i % 3]]) for i, row in enumerate(picks)]


def write_config(workspace: Path, endpoint: str) -> Path:
    config = workspace / "ctx.toml"
    config.write_text(
        f'[db]\npath = "{(workspace / "data" / "ctx.sqlite").as_posix()}"\n'
        "[chunking]\nmax_tokens = 64\n"
        f'[embedding]\nprovider = "openai"\nbase_url = "{endpoint}"\nmodel = "bench-words"\ndims = {DIMS}\n'
        "batch_size = 256\n"
        "[server]\nsync_on_start = false\n"
        f'[connectors.filesystem.bench]\nroot = "{(workspace / "docs").as_posix()}"\n',
        encoding="utf-8")
    return config


def pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)), 3)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


# -- one workspace --------------------------------------------------------------------------------

def build(workspace: Path, config_path: Path) -> dict:
    """``sync`` in this process through ``Harness``: the keyword pass, embedding, then (a large
    index) the vector graph built and saved."""
    import anyio

    from context_harness import config as config_mod
    from context_harness.core.harness import Harness

    figures: dict = {}

    async def run() -> None:
        async with Harness.open(config_mod.load_file(config_path)) as harness:
            started = time.perf_counter()

            marks: dict[str, float] = {}

            def progress(event: dict) -> None:
                if event.get("event") in ("keyword_ready", "start", "done"):
                    marks[f"{event['event']} {event.get('source', '')}".strip()] = time.perf_counter()

            await harness.sync(progress=progress)
            ended = time.perf_counter()
            graph_from, graph_to = marks.get("start vector graph", ended), marks.get("done vector graph", ended)
            figures["keyword_sync_s"] = round(marks.get("keyword_ready", ended) - started, 1)
            figures["embed_s"] = round(graph_from - marks.get("keyword_ready", ended), 1)
            figures["graph_build_s"] = round(graph_to - graph_from, 1)
            figures["sync_s"] = round(ended - started, 1)
            stats = await harness.stats()
            figures["documents"], figures["chunks"] = stats.documents, stats.chunks

    anyio.run(run)
    return figures


def in_process(config_path: Path, queries: list[str], table: np.ndarray) -> dict:
    """Semantic top-10 on the opened index (query vectors given) against exact search over every
    stored vector; keyword search through ``Harness.search``."""
    import anyio

    from context_harness import config as config_mod
    from context_harness.core.harness import Harness
    from context_harness.models import SearchRequest

    config = config_mod.load_file(config_path)
    figures: dict = {}

    async def run() -> None:
        async with Harness.open(config) as harness:
            assert harness.vectors is not None
            started = time.perf_counter()
            index = harness.vectors.open_index()
            figures["index_open_s"] = round(time.perf_counter() - started, 3)
            vectors = embed_texts(table, queries)
            times, answers = [], []
            for q in vectors:
                t0 = time.perf_counter()
                hits = index.top_k(q, 10)
                times.append((time.perf_counter() - t0) * 1000)
                answers.append([c for c, _, _ in hits])
            exact, tenth, true_score = exact_top10(harness.vectors, index, vectors, answers)
            found = tied = 0
            for i, (answer, truth, bar) in enumerate(zip(answers, exact, tenth, strict=True)):
                found += len(set(answer) & truth)
                # ann-benchmarks' definition: a hit counts when its exact score is as high as the
                # exact 10th (a tie at the cut is as good an answer); 1e-5 absorbs float32 sums.
                tied += sum(1 for c in answer if true_score[(i, c)] >= bar - 1e-5)
            figures["approximate"] = index.approximate
            figures["semantic_top10_ms_p50"], figures["semantic_top10_ms_p99"] = pct(times, 50), pct(times, 99)
            figures["recall_at_10"] = round(found / (10 * len(queries)), 4)
            figures["recall_at_10_ties_counted"] = round(tied / (10 * len(queries)), 4)
            for q in queries[:20]:
                await harness.search(SearchRequest(query=q, mode="keyword"))
            times = []
            for q in queries:
                t0 = time.perf_counter()
                harness.search_sync(SearchRequest(query=q, mode="keyword"))
                times.append((time.perf_counter() - t0) * 1000)
            figures["keyword_ms_p50"], figures["keyword_ms_p99"] = pct(times, 50), pct(times, 99)

    anyio.run(run)
    return figures


def exact_top10(vectors, index, queries: np.ndarray, answers: list[list[str]]
                ) -> tuple[list[set[str]], np.ndarray, dict[tuple[int, str], float]]:
    """Exact top-10 chunk ids per query over every stored vector (streamed from SQLite), each
    query's 10th best score, and the exact float32 score of every chunk in ``answers`` (the index's
    hits, whose own scores come from float16 vectors)."""
    ids = index._chunk_ids[: index._n]
    keys = index._hash_keys[: index._n]
    live = index._live[: index._n]
    order = np.argsort(keys, kind="stable")
    best_scores = np.full((len(queries), 10), -np.inf, np.float32)
    best_rows = np.full((len(queries), 10), -1, np.int64)
    asked = {c.encode() for answer in answers for c in answer}
    hit_scores: dict[str, np.ndarray] = {}
    from context_harness.store.vector_index import _hash_keys

    with vectors.snapshot():
        for rows in vectors.vector_batches():
            block = np.frombuffer(b"".join(r[1] for r in rows), "<f4").reshape(len(rows), DIMS)
            k = _hash_keys([r[0] for r in rows])
            at = np.searchsorted(keys[order], k)
            at = np.minimum(at, len(order) - 1)
            pos = order[at]
            ok = (keys[pos] == k) & live[pos]
            if not ok.any():
                continue
            scores = queries @ block[ok].T
            for column, row in enumerate(pos[ok]):
                if ids[row] in asked:
                    hit_scores[ids[row].decode()] = scores[:, column].copy()
            merged_scores = np.concatenate([best_scores, scores], axis=1)
            merged_rows = np.concatenate([best_rows, np.broadcast_to(pos[ok], scores.shape)], axis=1)
            top = np.argsort(-merged_scores, axis=1)[:, :10]
            best_scores = np.take_along_axis(merged_scores, top, 1)
            best_rows = np.take_along_axis(merged_rows, top, 1)
    true_score = {(i, c): float(hit_scores[c][i]) if c in hit_scores else -np.inf
                  for i, answer in enumerate(answers) for c in answer}
    return [{ids[r].decode() for r in row if r >= 0} for row in best_rows], best_scores[:, -1], true_score


def over_stdio(config_path: Path, queries: list[str]) -> dict:
    peer = bench_mcp.StdioPeer(config_path, dict(os.environ))
    figures: dict = {}
    try:
        figures["handshake_s"] = round(peer.handshake(), 2)
        reply = peer.call("search", {"query": queries[0], "mode": "semantic", "limit": 10})
        figures["open_s"] = round(time.perf_counter() - peer.started, 2)
        assert "error" not in reply and not reply["result"].get("isError"), reply
        for mode in ("semantic", "hybrid"):
            for q in queries[:20]:
                peer.call("search", {"query": q, "mode": mode, "limit": 10})
            times = []
            for q in queries[20:]:
                t0 = time.perf_counter()
                reply = peer.call("search", {"query": q, "mode": mode, "limit": 10})
                times.append((time.perf_counter() - t0) * 1000)
                assert "error" not in reply and not reply["result"].get("isError"), reply
            figures[f"{mode}_ms_p50"], figures[f"{mode}_ms_p99"] = pct(times, 50), pct(times, 99)
        figures["rss_mb"] = rss_mb(peer.proc.pid)
    finally:
        peer.close()
    return figures


def one_workspace(tmp: Path, endpoint: str, chunks: int, sections: int, table: np.ndarray, reuse: bool) -> dict:
    workspace = tmp / f"ws-{chunks}-{sections}"
    out: dict = {"chunks_asked": chunks, "sections_per_document": sections}
    if reuse:  # a workspace kept by an earlier run: only the searches are measured again
        queries = write_corpus(tmp / "queries-only", 0, sections)
        config_path = write_config(workspace, endpoint)
        out["reused"] = True
    else:
        started = time.perf_counter()
        queries = write_corpus(workspace / "docs", chunks, sections)
        out["write_files_s"] = round(time.perf_counter() - started, 1)
        config_path = write_config(workspace, endpoint)
        out.update(build(workspace, config_path))
    out.update(over_stdio(config_path, queries))
    out["in_process"] = in_process(config_path, queries[20:], table)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", default="100000,1000000", help="comma-separated chunk counts ('' for none)")
    parser.add_argument("--one-chunk-docs", type=int, default=300_000, help="0 to skip")
    parser.add_argument("--tmp", default=None, help="where the workspaces go (several GB at 1M chunks)")
    parser.add_argument("--keep", default=None, help="build the workspaces in this folder and keep them")
    parser.add_argument("--reuse", action="store_true", help="with --keep: measure the kept workspaces again")
    parser.add_argument("--serve-embeddings", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_embeddings:
        serve_embeddings(Path(args.serve_embeddings))
        return
    table = word_table()
    results = []
    with contextlib.ExitStack() as stack:
        if args.keep:
            tmp = Path(args.keep)
            tmp.mkdir(parents=True, exist_ok=True)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-scale-", dir=args.tmp)))
        with embeddings_endpoint(tmp) as endpoint:
            runs = [(int(c), SECTIONS) for c in args.chunks.split(",") if c.strip()]
            if args.one_chunk_docs:
                runs.append((args.one_chunk_docs, 1))
            for chunks, sections in runs:
                result = one_workspace(tmp, endpoint, chunks, sections, table, args.reuse)
                results.append(result)
                print(json.dumps(result), flush=True)
    print(json.dumps({"benchmark": "scale", "cores": os.cpu_count(), "runs": len(results),
                      "open_s_max": max((r["open_s"] for r in results), default=None),
                      "recall_at_10_min": min((r["in_process"]["recall_at_10"] for r in results), default=None),
                      "median_semantic_ms_p50":
                          statistics.median(r["semantic_ms_p50"] for r in results) if results else None}))


if __name__ == "__main__":
    main()
