"""One huge Markdown file: what its sync costs, and what reading it costs per request.

    .venv/bin/python benchmarks/huge_document.py [--mb 50] [--reads 5]

Writes one Markdown file of ``--mb`` megabytes (headed sections of paragraphs, lists and code, like
a long manual) into a fresh workspace whose folder source allows it (``max_file_size`` just above its
size) and measures:

- ``sync_seconds``, ``sync_peak_rss_mb``: a keyword-only ``ctx sync`` of it in its own process; the
  peak is the resident memory of that process and its chunking helpers together, sampled every 20 ms,
  and ``idle_rss_mb`` the same process after opening the workspace, before the sync;
- ``get_whole_*``: ``get`` with ``max_chars: 0`` (milliseconds, characters of body in the answer);
- ``get_window_ms``, ``get_chunk_ms``: the default window in the middle of the document (an
  ``offset``) and a chunk's section there (median of ``--reads``);
- ``console_page_ms``, ``console_page_bytes``: the console's document page at that chunk
  (``GET /ui/doc?id=...&chunk=N`` on the real Starlette app, in this process; median of ``--reads``).

Prints one JSON line. Targets (issue 39): the console page <= 500 ms, ``get`` answers at most its
ceiling whatever the document's size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import anyio

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import httpx2  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402
from context_harness.ingest.chunk_worker import available_cores  # noqa: E402
from context_harness.models import GetRequest  # noqa: E402

WORDS = ("harbour lantern keeper tide signal beacon ledger rope anchor storm gull chart compass voyage cargo "
         "vessel mooring quay pilot drift current reef buoy shoal naïve café 日本語").split()


def manual(target_bytes: int) -> str:
    """A Markdown manual of about ``target_bytes`` bytes (UTF-8)."""
    rng = random.Random(39)
    parts, size, n = ["# Huge manual\n"], 0, 0
    while size < target_bytes:
        lines = [f"\n## Section {n}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n"]
        if n % 3 == 0:
            lines.append(f"\n### Details of section {n}\n")
        for _ in range(rng.randint(2, 5)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 140))).capitalize() + "."
            lines.append("\n" + "\n".join(textwrap.wrap(text, 90)) + "\n")
        if n % 4 == 0:
            lines.append(f"\n```js\nconst fd = open('file-{n}.txt', 'r');\nread(fd, buffer);\n```\n")
        if n % 5 == 0:
            lines.append("\n" + "".join(f"- {rng.choice(WORDS)} {rng.choice(WORDS)}\n" for _ in range(4)))
        section = "".join(lines)
        parts.append(section)
        size += len(section.encode())
        n += 1
    return "".join(parts)


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (Linux ``/proc``)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{current}/task/{current}/children") as children:
                todo.extend(int(c) for c in children.read().split())
        except OSError:
            continue
    return total


def config_dict(workspace: Path, max_file_size: int) -> dict:
    return {"db": {"path": str(workspace / "data" / "ctx.sqlite")}, "embedding": {"provider": "disabled"},
            "connectors": {"filesystem": {"docs": {"root": str(workspace / "docs"), "max_file_size": max_file_size}}}}


async def sync_child(workspace: Path, max_file_size: int) -> None:
    """The measured sync (``--child``): says when the workspace is open, then when the sync is done."""
    async with Harness.open(config_mod.from_dict(config_dict(workspace, max_file_size), None)) as harness:
        print("open", flush=True)
        sys.stdin.readline()
        t0 = time.perf_counter()
        summary = (await harness.sync()).sources[0]
        print(json.dumps({"seconds": time.perf_counter() - t0, "added": summary.added,
                          "skipped": summary.skipped_reasons}), flush=True)


def measured_sync(workspace: Path, max_file_size: int) -> dict:
    command = [sys.executable, __file__, "--child", str(workspace), "--max-file-size", str(max_file_size)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "open"
    idle = tree_rss(proc.pid)
    peak, done = idle, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, tree_rss(proc.pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    result = json.loads(proc.stdout.readline())
    done.set()
    sampler.join()
    proc.wait(timeout=120)
    return {"sync_seconds": round(result["seconds"], 2), "sync_added": result["added"],
            "sync_skipped": result["skipped"], "idle_rss_mb": round(idle / 1e6, 1),
            "sync_peak_rss_mb": round(peak / 1e6, 1)}


def median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 1)


async def reads(workspace: Path, max_file_size: int, count: int) -> dict:
    from context_harness.server.http import build_app

    out: dict = {}
    async with Harness.open(config_mod.from_dict(config_dict(workspace, max_file_size), None)) as harness:
        [hit] = (await harness.document_listing()).documents
        t0 = time.perf_counter()
        whole = await harness.get(GetRequest(id=hit.id, max_chars=0))
        out["get_whole_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        out["get_whole_body_chars"] = len(whole.body)
        out["document_chars"] = whole.total_chars
        middle = (whole.total_chars or 0) // 2
        window, section = [], []
        for _ in range(count):
            t0 = time.perf_counter()
            at = await harness.get(GetRequest(id=hit.id, offset=middle))
            window.append(time.perf_counter() - t0)
        chunk = next(c.index for c in at.chunks if c.start is not None and c.start >= middle)
        for _ in range(count):
            t0 = time.perf_counter()
            await harness.get(GetRequest(id=hit.id, chunk=chunk))
            section.append(time.perf_counter() - t0)
        out["get_window_ms"], out["get_chunk_ms"] = median_ms(window), median_ms(section)
        app = build_app(harness)
        pages = []
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            for _ in range(count):
                t0 = time.perf_counter()
                page = await http.get("/ui/doc", params={"id": hit.id, "chunk": str(chunk)})
                pages.append(time.perf_counter() - t0)
                assert page.status_code == 200, page.text[:300]
        out["console_page_ms"], out["console_page_bytes"] = median_ms(pages), len(page.content)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--reads", type=int, default=5)
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--max-file-size", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(sync_child, Path(args.child), args.max_file_size)
        return
    out: dict = {"benchmark": "huge_document", "cores": available_cores(), "mb": args.mb}
    with tempfile.TemporaryDirectory(prefix="ctx-huge-", dir=args.tmp) as tmp:
        workspace = Path(tmp)
        (workspace / "docs").mkdir()
        text = manual(int(args.mb * 1e6))
        path = workspace / "docs" / "huge.md"
        path.write_text(text, encoding="utf-8")
        del text
        max_file_size = path.stat().st_size + 1
        out["file_bytes"] = max_file_size - 1
        out.update(measured_sync(workspace, max_file_size))
        out.update(anyio.run(reads, workspace, max_file_size, args.reads))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
