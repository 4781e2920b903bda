"""A sync killed with SIGKILL mid-way, then re-run, gives the same index as an uninterrupted sync."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

N_DOCS = 900


def make_workspace(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for i in range(N_DOCS):
        body = " ".join(f"term{(i * 7 + j) % 997}" for j in range(220))
        (docs / f"doc{i:05d}.md").write_text(f"# Document {i}\n\n{body}\n\n## More\n\n{body[::-1]}\n")
    cfg = root / "ctx.toml"
    cfg.write_text('[embedding]\nprovider = "disabled"\n[connectors.filesystem.docs]\nroot = "docs"\n')
    return cfg


def snapshot(cfg: Path) -> dict:
    async def main() -> dict:
        async with Harness.open(config_mod.load_file(cfg)) as h:
            assert h.store is not None and h.index is not None
            sqlite_chunks = h.store.all_chunk_ids()
            index_docs = h.index.all_doc_ids()  # one entry per document
            results = await h.search(SearchRequest(query="term5 term77 document", limit=20))
            docs = h.store.connection().execute(
                "SELECT id, source_id, content_hash FROM documents ORDER BY id").fetchall()
            return {"sqlite": sqlite_chunks, "index": index_docs, "sqlite_docs": {d[0] for d in docs}, "docs": docs,
                    "queue": h.store.queued(), "search": [(r.source_id, r.score) for r in results.results]}

    return anyio.run(main)


def run_sync(cfg: Path, kill_after: int | None = None) -> None:
    cmd = [sys.executable, "-m", "context_harness", "sync", "--config", str(cfg), "--progress", "json"]
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True) as proc:
        if kill_after is None:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            return
        assert proc.stderr is not None
        for line in proc.stderr:
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "progress" and event["done"] >= kill_after:
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, "the sync finished before it could be killed"


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [200, 600])
def test_killed_sync_then_rerun_equals_uninterrupted(tmp_path: Path, kill_after: int) -> None:
    reference = make_workspace(tmp_path / "reference")
    run_sync(reference)
    expected = snapshot(reference)
    assert expected["sqlite_docs"] == expected["index"] and len(expected["docs"]) == N_DOCS

    crashed = make_workspace(tmp_path / "crashed")
    run_sync(crashed, kill_after=kill_after)
    run_sync(crashed)
    got = snapshot(crashed)
    assert got["queue"] == []
    assert got["sqlite_docs"] == got["index"]
    # Same documents with the same ids, and the same content-addressed chunks in both stores.
    assert [d[:2] for d in got["docs"]] == [d[:2] for d in expected["docs"]]
    assert got["sqlite"] == expected["sqlite"]
    assert got["search"] == expected["search"]


def test_queue_left_by_a_crash_is_replayed_on_open(sample_docs) -> None:
    """Simulate a crash between the SQLite commit and the index commit."""

    async def main() -> None:
        cfg = sample_docs.config()
        async with Harness.open(cfg) as h:
            await h.sync()
            assert h.store is not None and h.index is not None
            h.index.clear()  # the index lost its data...
            h.store.enqueue_all()  # ...but SQLite still records that it must be fed
            assert (await h.search(SearchRequest(query="sandbox"))).results == []
        async with Harness.open(cfg) as h:
            assert [r.title for r in (await h.search(SearchRequest(query="sandbox"))).results] == ["Lua Sandbox"]

    anyio.run(main)


def test_index_of_another_version_is_rebuilt(sample_docs) -> None:
    async def main() -> None:
        cfg = sample_docs.config()
        async with Harness.open(cfg) as h:
            await h.sync()
        marker = cfg.db.path.parent / "tantivy" / "ctx-index.json"
        marker.write_text('{"version": -1}')
        async with Harness.open(cfg) as h:
            assert [r.title for r in (await h.search(SearchRequest(query="sandbox"))).results] == ["Lua Sandbox"]

    anyio.run(main)


def test_delete_file_left_by_a_killed_commit_does_not_block_the_next_writer(tmp_path: Path) -> None:
    """A commit killed after writing ``<segment>.<opstamp>.del`` but before ``meta.json`` named it
    (found by the kill battery): the same deletion committed again must succeed, not raise
    ``FileAlreadyExists``."""
    import shutil

    from context_harness.store.keyword import KeywordIndex
    from context_harness.store.records import IndexedDocument

    def doc(i: int, body: str) -> IndexedDocument:
        return IndexedDocument(f"d{i}", f"title {i}", body, "files:notes", [], None)

    path = tmp_path / "tantivy"
    index = KeywordIndex(path)
    index.replace([], [doc(i, f"first words {i}") for i in range(20)])
    before = tmp_path / "before"
    shutil.copytree(path, before)
    index.replace(["d3"], [doc(3, "second words")])
    del index
    left = {p.name: p.read_bytes() for p in path.iterdir() if p.suffix == ".del" and not (before / p.name).exists()}
    assert left, "the deletion should have written a .del file"
    # The state a kill inside that commit leaves: the old commit plus the new delete file.
    shutil.rmtree(path)
    shutil.copytree(before, path)
    for name, data in left.items():
        (path / name).write_bytes(data)
    reopened = KeywordIndex(path)
    reopened.replace(["d3"], [doc(3, "second words")])
    assert reopened.doc_id_counts()["d3"] == 1
    assert [h.doc_id for h in reopened.search("second", None, 5)] == ["d3"]


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from context_harness.store.keyword import KeywordIndex
from context_harness.store.records import IndexedDocument

start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
index = KeywordIndex(Path(sys.argv[1]))
print(len(index.doc_id_counts()), flush=True)
"""


def test_processes_opening_a_new_index_at_once_all_succeed(tmp_path: Path) -> None:
    """Several processes open a workspace whose keyword index does not exist yet, at the same
    instant (two ``ctx sync`` started together; found by CI): none may take another's half-made
    index for a damaged one and delete it from under it."""
    import time

    for round_ in range(4):
        path = tmp_path / f"round{round_}" / "tantivy"
        start = time.time() + 1.5  # past every child's import time, so the opens collide
        children = [subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(path), str(start)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
        outcomes = [child.communicate(timeout=60) for child in children]
        for child, (out, err) in zip(children, outcomes, strict=True):
            assert child.returncode == 0 and out.strip() == "0", err
            assert "rebuilding" not in err, err
        assert json.loads((path / "ctx-index.json").read_text())["version"]
        assert not [p for p in path.parent.iterdir() if p.name != "tantivy"], "a staging folder was left behind"


def test_stores_opening_a_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    """Two ``ctx sync`` started together on a new workspace both open its new SQLite file and switch it
    to WAL; SQLite answers one "database is locked" at once rather than wait (found by CI). Threads
    collide at a barrier here, as often as processes do: without the retry, some of 200 rounds of four
    failed (13 of 150 when measured)."""
    import threading

    from context_harness.store.documents import DocumentStore
    from context_harness.store.vectors import VectorStore

    errors: list[BaseException] = []
    for round_ in range(200):
        path = tmp_path / f"round{round_}" / "ctx.sqlite"
        barrier = threading.Barrier(4)

        def open_store(kind: type[DocumentStore] | type[VectorStore], path: Path = path,
                       barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                kind(path).close()
            except BaseException as exc:  # collected, asserted below
                errors.append(exc)

        threads = [threading.Thread(target=open_store, args=(kind,)) for kind in (DocumentStore, VectorStore) * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors, errors[:3]
