"""Code read as code: "where is X defined?" over this repository's own code as a git source.

    .venv/bin/python benchmarks/code_search.py [--repo PATH] [--mode keyword] [--limit 5]

Clones the repository (its committed state; default: the checkout this script sits in) through a
``[connectors.git]`` source with ``include_globs = ["@code"]``, in a temp workspace, twice: once read by
symbol (``ingest/code_chunking.py``, the ``code`` extra) and once as today's prose (every code file a
text file, Markdown-chunked: ``common.symbols.language_for`` answering None). Asks the ten questions
of ``QUESTIONS``, which name the symbol (written before the first run), and the ten of ``DESCRIBED``,
which describe it in words, in ``--mode``. A hit is a result whose ``source_id`` is the file
defining the symbol; *shown* counts top results whose ``heading`` ends with the symbol (the
chunk to ``get`` is its definition). Prints one JSON object: recall@1, recall@3, recall@5 and shown@1
per reading and question set, and the sync time of each (with ``--mode hybrid`` or ``semantic``,
embedding the chunks with the bundled model included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from context_harness import config as config_mod
from context_harness.common import symbols
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

REPO = Path(__file__).resolve().parent.parent
QUESTIONS: list[tuple[str, str, str]] = [  # (question, file defining it, symbol)
    ("where is Harness.open defined", "context_harness/core/harness.py", "Harness.open"),
    ("chunk_markdown", "context_harness/ingest/chunking.py", "chunk_markdown"),
    ("where is the KeywordIndex class defined", "context_harness/store/keyword.py", "KeywordIndex"),
    ("SearchEngine.resolve_mode", "context_harness/search/engine.py", "SearchEngine.resolve_mode"),
    ("definition of section_window", "context_harness/common/passages.py", "section_window"),
    ("estimate_tokens function", "context_harness/common/text.py", "estimate_tokens"),
    ("where is default_include_globs", "context_harness/config/__init__.py", "default_include_globs"),
    ("Globs.wanted", "context_harness/connectors/filesystem.py", "Globs.wanted"),
    ("class ChunkPool", "context_harness/ingest/chunk_worker.py", "ChunkPool"),
    ("Syncer.sync method", "context_harness/ingest/sync.py", "Syncer.sync"),
]
DESCRIBED: list[tuple[str, str, str]] = [  # the same without a name; the first five were tried while writing
    ("where is the tantivy schema built", "context_harness/store/keyword.py", "_schema"),
    ("function that estimates tokens without a tokenizer", "context_harness/common/text.py", "estimate_tokens"),
    ("where are oversized blocks split into sentences", "context_harness/ingest/chunking.py", "_split_oversized"),
    ("parse a duration like 15m", "context_harness/config/__init__.py", "parse_duration"),
    ("escape a file name for source_id", "context_harness/connectors/names.py", "escape_name"),
    ("where are .gitignore files read during a folder scan", "context_harness/connectors/filesystem.py",
     "_gitignores"),
    ("merge the keyword and semantic rankings", "context_harness/search/fusion.py", "fuse"),
    ("remove secrets from text", "context_harness/common/redaction.py", "redact"),
    ("content-addressed id of a chunk", "context_harness/store/records.py", "chunk_id"),
    ("take the lock that lets one process write the workspace", "context_harness/store/writer_lock.py",
     "WriterLock.try_acquire"),
]


def write_config(root: Path, repo: Path, embedding: str = "disabled") -> Path:
    path = root / "ctx.toml"
    path.write_text(f'[db]\npath = "{(root / "data" / "ctx.sqlite").as_posix()}"\n\n'
                    f'[embedding]\nprovider = "{embedding}"\n\n'
                    f'[connectors.git.self]\nurl = "{repo.as_posix()}"\ninclude_globs = ["@code"]\n'
                    'exclude_globs = ["tests/", "benchmarks/"]\nsync_interval = "off"\n', encoding="utf-8")
    return path


async def measure(root: Path, repo: Path, mode: str, limit: int) -> dict[str, Any]:
    config = config_mod.load_file(write_config(root, repo, "disabled" if mode == "keyword" else "local"))
    async with Harness.open(config) as harness:
        started = time.perf_counter()
        summary = await harness.sync("all")
        synced = time.perf_counter() - started
        named = await ask(harness, QUESTIONS, mode, limit)
        described = await ask(harness, DESCRIBED, mode, limit)
        chunks = harness.store.counts()[1] if harness.store is not None else None
    return {**named, "described": described, "documents": summary.total("added"), "chunks": chunks,
            "sync_seconds": round(synced, 2)}


async def ask(harness: Harness, questions: list[tuple[str, str, str]], mode: str, limit: int) -> dict[str, Any]:
    """recall@1/@3/@5 and shown@1 of ``questions`` (see the module notes), with each answer's rank."""
    hits: dict[int, int] = {1: 0, 3: 0, 5: 0}
    shown = 0
    answers = []
    for question, path, symbol in questions:
        results = (await harness.search(SearchRequest(query=question, mode=mode, limit=limit))).results
        ids = [r.source_id for r in results]
        for k in hits:
            hits[k] += path in ids[:k]
        top = results[0] if results else None
        shown += top is not None and top.source_id == path and (top.heading or "").endswith(symbol)
        answers.append({"q": question, "rank": ids.index(path) + 1 if path in ids else None,
                        "heading": top.heading if top else None})
    n = len(questions)
    return {"recall@1": hits[1] / n, "recall@3": hits[3] / n, "recall@5": hits[5] / n, "shown@1": shown / n,
            "answers": answers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--mode", default="keyword", choices=["keyword", "hybrid", "semantic"])
    parser.add_argument("--limit", type=int, default=5)
    args = parser.parse_args()
    if not symbols.available():
        sys.exit("the code extra is not installed: pip install 'context-harness[code]'")
    if not (args.repo / ".git").exists():
        sys.exit(f"{args.repo} is not a git checkout")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.repo, capture_output=True,
                          text=True, check=True).stdout.strip()
    out: dict[str, Any] = {"benchmark": "code_search", "repo_head": head, "mode": args.mode,
                           "questions": len(QUESTIONS)}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "symbol").mkdir()
        out["symbol"] = anyio.run(measure, Path(tmp) / "symbol", args.repo.resolve(), args.mode, args.limit)
        reading = symbols.language_for
        symbols.language_for = lambda path: None  # today's reading: code files as text
        try:
            (Path(tmp) / "prose").mkdir()
            out["prose"] = anyio.run(measure, Path(tmp) / "prose", args.repo.resolve(), args.mode, args.limit)
        finally:
            symbols.language_for = reading
    print(json.dumps(out))


if __name__ == "__main__":
    main()
