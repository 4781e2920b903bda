"""``ctx check``: SQLite, the keyword index and the vectors agree, or each disagreement is one line and
``--repair`` fixes it. The disagreements are made the way a cut-short write or a hand edit leaves them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from support.cli import run_ctx

pytestmark = pytest.mark.anyio


def notes(workspace) -> None:
    for i in range(6):
        workspace.write(f"n{i}.md", f"# Note {i}\n\nThe walrus number {i} sleeps on ice.\n")


async def test_a_synced_workspace_is_consistent(workspace) -> None:
    notes(workspace)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        report = await harness.check()
    assert report.consistent and report.problems == [] and report.documents == 6 and report.chunks >= 6


async def test_each_disagreement_is_named_then_repaired(workspace) -> None:
    notes(workspace)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        store, index = harness.store, harness.index
        ids = sorted(store.all_ids())
        index.replace([ids[0]], [])  # a keyword entry lost
        with store.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE doc_id=?", (ids[2],))  # a document left without chunks
            conn.execute("INSERT INTO index_queue(doc_id) VALUES(?)", (ids[3],))  # an interrupted sync's marker
        store.connection().execute("PRAGMA foreign_keys=OFF")  # as a hand edit or another tool would
        with store.transaction() as conn:
            conn.execute("DELETE FROM documents WHERE id=?", (ids[1],))  # its chunks and keyword entry stay
        store.connection().execute("PRAGMA foreign_keys=ON")
        report = await harness.check()
        kinds = sorted(p.kind for p in report.problems)
        assert not report.consistent and not any(p.repaired for p in report.problems)
        assert kinds == ["index_queue", "keyword_extra", "keyword_missing", "stray_chunks", "unchunked"]
        assert all("\n" not in p.message and "ctx check --repair" in p.message for p in report.problems)
        repaired = await harness.check(repair=True)
        assert repaired.consistent and all(p.repaired for p in repaired.problems)
        assert (await harness.check()).problems == []
        hits = (await harness.search(SearchRequest(query="walrus", mode="keyword"))).results
        assert sorted(h.id for h in hits) == sorted(set(ids) - {ids[1]})
        assert store.chunks(ids[2])  # chunked again


async def test_orphan_vectors_are_found_and_deleted(tmp_path, make_workspace) -> None:
    from context_harness import config as config_mod
    from context_harness.embedding import fake

    fake.register()  # a deterministic embedder, registered the real way
    cfg = config_mod.load_file(make_workspace(tmp_path, embedding="fake"))
    async with Harness.open(cfg) as harness:
        await harness.sync()
        await harness.embed()
        assert harness.vectors is not None and harness.vectors.count() > 0 and harness.vectors.orphans() == 0
        harness.vectors.put_many([("0" * 64, np.ones(harness.vectors.identity().dims, dtype=np.float32))])
        [problem] = (await harness.check()).problems
        assert problem.kind == "orphan_vectors" and problem.message.startswith("1 vectors belong to no chunk")
        assert (await harness.check(repair=True)).consistent
        assert harness.vectors.orphans() == 0


def test_ctx_check_exits_1_with_one_line_per_problem_then_0(workspace) -> None:
    notes(workspace)
    assert run_ctx("sync", "--progress", "none", cwd=workspace.root).returncode == 0
    clean = run_ctx("check", cwd=workspace.root)
    assert clean.returncode == 0 and clean.stdout.startswith("consistent: 6 documents"), clean.stderr
    import sqlite3

    conn = sqlite3.connect(workspace.root / "data" / "ctx.sqlite")
    conn.execute("DELETE FROM chunks WHERE doc_id IN (SELECT id FROM documents ORDER BY source_id LIMIT 2)")
    conn.commit()
    conn.close()
    found = run_ctx("check", cwd=workspace.root)
    assert found.returncode == 1
    assert found.stdout.splitlines() == [
        "problem: 2 documents have no chunks (n0.md, n1.md); `ctx check --repair` chunks them again"]
    fixed = run_ctx("check", "--repair", "--json", cwd=workspace.root)
    report = json.loads(fixed.stdout)
    assert fixed.returncode == 0 and report["consistent"] and report["problems"][0]["repaired"]
    assert run_ctx("check", cwd=workspace.root).returncode == 0
