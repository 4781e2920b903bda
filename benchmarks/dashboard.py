"""The console's sources dashboard and agent builder: what their pages cost as the text grows.

    .venv/bin/python benchmarks/dashboard.py [--notes 2000] [--mb 50] [--reads 5]

Writes ``--notes`` Markdown notes of about 2 kB and one document of ``--mb`` megabytes into a fresh
workspace (keyword only: no embedder), syncs it, and measures on the real Starlette app in this
process (median of ``--reads``, milliseconds):

- ``sources_ms``: ``Harness.sources`` (what the ``sources`` tool reports), for comparison;
- ``source_details_ms``: ``Harness.source_details`` (each source's text in bytes: it reads the
  length of every document, once per page view and again only when a source's documents change);
- ``sources_page_ms``: ``GET /ui/sources`` (figures, rows, the newest changes of each source);
- ``builder_page_ms``: ``GET /ui/new-agent`` (a toggle per tool the server offers);
- ``preview_ms``: ``POST /ui/agent-preview`` of a two-argument agent with sample values (the core
  resolves the unsaved file).

Prints one JSON line, with ``text_mb`` (the documents' text as counted) and ``cores``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import httpx2  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.server.http import build_app  # noqa: E402

SENTENCE = "The harbour master logs each arrival, the tide and the berth in the red ledger. "


def write_workspace(root: Path, notes: int, mb: int) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for n in range(notes):
        (docs / f"note-{n:05}.md").write_text(f"# Note {n}\n\n" + SENTENCE * 25 + "\n", encoding="utf-8")
    if mb:
        (docs / "huge.md").write_text("# Huge\n\n" + SENTENCE * (mb * 1_000_000 // len(SENTENCE)), encoding="utf-8")
    config = root / "ctx.toml"
    config.write_text(f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
                      f'[connectors.filesystem.docs]\nroot = "docs"\nmax_file_size = {mb * 1_000_000 + 1_000_000}\n\n'
                      '[agents]\npaths = ["agents"]\n', encoding="utf-8")
    return config


async def timed(reads: int, call) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(reads):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1)


async def measure(config_path: Path, reads: int) -> dict:
    async with Harness.open(config_mod.load_file(config_path)) as h:
        await h.sync()
        details = await h.source_details()
        app = build_app(h)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1",
                                      timeout=120) as ui:
            builder = await ui.get("/ui/new-agent")
            csrf = re.search(r'name="csrf-token" content="([0-9a-f]{64})"', builder.text).group(1)
            form = {"csrf": csrf, "action": "preview", "name": "pilot", "system_prompt": "Guide {{boat}} at {{hour}}.",
                    "tool": ["search", "get"], "arg-0-name": "boat", "arg-0-required": "1", "arg-0-sample": "the ketch",
                    "arg-1-name": "hour", "arg-1-enum": "dawn, noon", "arg-1-default": "noon"}

            async def page(path: str) -> None:
                assert (await ui.get(path)).status_code == 200

            async def preview() -> None:
                answer = await ui.post("/ui/agent-preview", data=form)
                assert "Guide the ketch at noon." in answer.text

            return {
                "text_mb": round(sum(d.text_bytes for d in details.values()) / 1e6, 1),
                "sources_ms": await timed(reads, h.sources),
                "source_details_ms": await timed(reads, h.source_details),
                "sources_page_ms": await timed(reads, lambda: page("/ui/sources")),
                "builder_page_ms": await timed(reads, lambda: page("/ui/new-agent")),
                "preview_ms": await timed(reads, preview),
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--reads", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_workspace(Path(tmp), args.notes, args.mb)
        figures = anyio.run(measure, config, args.reads)
    print(json.dumps({"notes": args.notes, "huge_mb": args.mb, **figures, "reads": args.reads,
                      "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()
