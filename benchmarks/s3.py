"""The S3 connector against a local S3-compatible server: first sync, no-op re-sync, re-sync after edits.

    python benchmarks/s3.py [--objects 10000] [--edits 100] [--clients]

Needs the `test` extra (boto3 and moto's server). Starts ``moto_server`` in its own process on a free
port of 127.0.0.1, fills a bucket with ``--objects`` Markdown objects (PUTs from 8 threads; not
timed), then times keyword-only ``Harness.sync`` runs (listing, GETs, chunking, SQLite, Tantivy):
1. the first sync of the bucket;
2. a re-sync with nothing changed (fingerprints only: no GET expected);
3. a re-sync after ``--edits`` objects were rewritten.
The objects fetched are counted at the server (GETs of objects in its access log). ``--clients`` also
times listing the whole bucket with boto3 and, when installed, obstore. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio

# benchmarks/mcp.py must not shadow the MCP SDK: drop this folder from the path (python puts it first).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import boto3  # noqa: E402

from context_harness import config as config_mod  # noqa: E402
from context_harness.core.harness import Harness  # noqa: E402

BUCKET = "bench-docs"
KEY, SECRET = "bench-key-id", "bench-secret-value"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=log.open("wb"))
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, url
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("moto_server did not start")


def _gets(log: Path) -> int:
    """Object GETs the server has answered so far (path style: ``GET /bucket/key``)."""
    return len(re.findall(rf'"GET /{BUCKET}/\S+ HTTP/', log.read_text(errors="replace")))


def _put(client: Any, objects: dict[str, str]) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda kv: client.put_object(Bucket=BUCKET, Key=kv[0], Body=kv[1].encode()), objects.items()))


def _doc(i: int, edited: bool = False) -> str:
    words = "edited lighthouse keeper" if edited else "harbour lantern tide"
    return f"# Note {i}\n\nA note about the {words} number {i}, for the S3 benchmark.\n"


async def _sync(h: Harness, log: Path) -> dict[str, Any]:
    before = _gets(log)
    started = time.perf_counter()
    summary = (await h.sync(embed=False)).sources[0]
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "objects_fetched": _gets(log) - before, "added": summary.added,
            "updated": summary.updated, "unchanged": summary.unchanged}


def _listing(url: str) -> dict[str, float]:
    out = {}
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name="us-east-1")
    started = time.perf_counter()
    listed = sum(len(p.get("Contents", [])) for p in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET))
    out["boto3_list_seconds"] = round(time.perf_counter() - started, 2)
    try:
        import obstore
        from obstore.store import S3Store
    except ImportError:
        return out | {"listed": listed}
    store = S3Store(BUCKET, endpoint=url, access_key_id=KEY, secret_access_key=SECRET, region="us-east-1",
                    client_options={"allow_http": True})
    started = time.perf_counter()
    sum(len(batch) for batch in obstore.list(store))
    out["obstore_list_seconds"] = round(time.perf_counter() - started, 2)
    return out | {"listed": listed}


async def run(objects: int, edits: int, clients: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log = root / "moto.log"
        process, url = _start(log)
        try:
            client = boto3.client("s3", endpoint_url=url, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                                  region_name="us-east-1")
            client.create_bucket(Bucket=BUCKET)
            started = time.perf_counter()
            _put(client, {f"notes/{i:05d}.md": _doc(i) for i in range(objects)})
            fill = time.perf_counter() - started
            os.environ.update({"BENCH_S3_KEY": KEY, "BENCH_S3_SECRET": SECRET})
            config = config_mod.from_dict({
                "db": {"path": str(root / "data" / "ctx.sqlite")}, "embedding": {"provider": "disabled"},
                "connectors": {"s3": {"bench": {"bucket": BUCKET, "endpoint_url": url, "region": "us-east-1",
                                                "access_key_id": "${BENCH_S3_KEY}",
                                                "secret_access_key": "${BENCH_S3_SECRET}"}}}}, None)
            result: dict[str, Any] = {"objects": objects, "edits": edits, "fill_seconds": round(fill, 1),
                                      "cores": os.cpu_count()}
            async with Harness.open(config) as h:
                result["first_sync"] = await _sync(h, log)
                result["noop_resync"] = await _sync(h, log)
                step = max(1, objects // edits) if edits else 0
                if edits:
                    _put(client, {f"notes/{i:05d}.md": _doc(i, edited=True) for i in range(0, objects, step)[:edits]})
                    result["resync_after_edits"] = await _sync(h, log)
            if clients:
                result["listing"] = _listing(url)
            return result
        finally:
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--clients", action="store_true", help="also time a whole listing with boto3 and obstore")
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args.objects, args.edits, args.clients)))


if __name__ == "__main__":
    main()
