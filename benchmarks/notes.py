"""Write-back through the real server over stdio: ``note_write`` -> found by ``search``.

    .venv/bin/python benchmarks/notes.py [--files 10000] [--writes 50]

Writes ``--files`` generated Markdown notes into a temp workspace whose one filesystem source has
``writable = true``, syncs them with ``ctx sync``, then starts ``python -m context_harness`` (stdio
MCP, watching the folder) with the MCP SDK's client and, ``--writes`` times, calls ``note_write``
with a note holding a fresh word and then ``search`` (keyword) for that word until it is the top
hit: seconds from the call to that answer, p50/p95/max (target p95 <= 1 s). Also times
``note_edit`` (append, with the version ``get`` returned) -> the appended word found, the same way.

Prints one JSON object. Bounded: each wait gives up after 10 s and the JSON says how many did.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # `import mcp` finds the SDK

from mcp import Client, StdioServerParameters  # noqa: E402

WORDS = ("river stone cloud garden lamp window paper bridge forest harbor signal engine copper meadow lantern "
         "orbit pencil canvas marble thunder valley shadow crystal velvet anchor beacon compass desert").split()
GIVE_UP = 10.0


def workspace(root: Path, files: int) -> Path:
    rng = random.Random(7)
    notes = root / "notes"
    for i in range(files):
        folder = notes / f"area{i % 50:02}"
        folder.mkdir(parents=True, exist_ok=True)
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        (folder / f"note{i:05}.md").write_text(f"# Note {i}\n\n{words}\n", encoding="utf-8")
    (notes / "inbox").mkdir(parents=True, exist_ok=True)
    config = root / "ctx.toml"
    config.write_text(f'[db]\npath = "{(root / "data" / "ctx.sqlite").as_posix()}"\n[embedding]\n'
                      'provider = "disabled"\n[server]\nsync_on_start = false\nwatch = true\n'
                      f'[connectors.filesystem.notes]\nroot = "{notes.as_posix()}"\nwritable = true\n',
                      encoding="utf-8")
    return config


async def until_top(client: Client, word: str, doc_id: str, started: float) -> float | None:
    """Seconds from ``started`` until ``word``'s top keyword hit is ``doc_id`` (None: gave up)."""
    while time.perf_counter() - started < GIVE_UP:
        found = (await client.call_tool("search", {"query": word, "mode": "keyword", "limit": 1})).structured_content
        if found and found["results"] and found["results"][0]["id"] == doc_id:
            return time.perf_counter() - started
        await anyio.sleep(0.01)
    return None


def figures(times: list[float | None]) -> dict[str, Any]:
    done = sorted(t for t in times if t is not None)
    if not done:
        return {"n": len(times), "gave_up": len(times)}
    p95 = done[min(len(done) - 1, int(round(0.95 * (len(done) - 1))))]
    return {"n": len(times), "gave_up": len(times) - len(done), "p50_s": round(statistics.median(done), 4),
            "p95_s": round(p95, 4), "max_s": round(done[-1], 4)}


async def measure(config: Path, writes: int) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config)])
    written: list[float | None] = []
    edited: list[float | None] = []
    async with Client(params) as client:
        for i in range(writes):
            word = f"zqwrite{i:04}x"
            started = time.perf_counter()
            out = (await client.call_tool("note_write", {"source": "notes", "path": f"inbox/n{i:04}.md",
                                                         "content": f"Remember {word} today."})).structured_content
            written.append(await until_top(client, word, out["id"], started))
            version = (await client.call_tool("get", {"id": out["id"]})).structured_content["version"]
            word = f"zqedit{i:04}x"
            started = time.perf_counter()
            await client.call_tool("note_edit", {"id": out["id"], "op": "append", "text": f"Also {word}.",
                                                 "expected_version": version})
            edited.append(await until_top(client, word, out["id"], started))
    return {"note_write_to_searchable": figures(written), "note_edit_to_searchable": figures(edited)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctx-notes-bench-") as tmp:
        config = workspace(Path(tmp), args.files)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "context_harness", "sync", "--config", str(config)], check=True,
                       capture_output=True)
        synced = time.perf_counter() - started
        result = anyio.run(measure, config, args.writes)
    print(json.dumps({"files": args.files, "writes": args.writes, "sync_s": round(synced, 2), **result}))


if __name__ == "__main__":
    main()
