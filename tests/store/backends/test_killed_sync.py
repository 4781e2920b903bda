"""A sync into PostgreSQL killed with SIGKILL mid-way, then re-run, gives the same knowledge base as an
uninterrupted one: every batch is one transaction (documents, chunks, postings, statistics)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from support.postgres import PostgresCluster

from ..test_crash import make_workspace, run_sync


def use_postgres(cfg: Path, url: str) -> Path:
    cfg.write_text(f'[db]\nbackend = "postgres"\nurl = "{url}"\n' + cfg.read_text())
    return cfg


def snapshot(cfg: Path) -> dict:
    async def main() -> dict:
        async with Harness.open(config_mod.load_file(cfg)) as h:
            assert h.store is not None
            ids = sorted(h.store.all_ids())
            docs = h.store.documents(ids)
            results = await h.search(SearchRequest(query="term5 term77 document", limit=20))
            stats = h.backend.documents.db  # type: ignore[union-attr]
            with stats.connection() as conn:
                kept = conn.execute("SELECT documents, title_tokens, body_tokens FROM keyword_stats").fetchone()
                counted = conn.execute("SELECT count(*), coalesce(sum(title_len), 0), coalesce(sum(body_len), 0) "
                                       "FROM documents").fetchone()
            return {"docs": [(i, docs[i].source_id, docs[i].content_hash) for i in ids],
                    "chunks": {i: [c.id for c in h.store.chunks(i)] for i in ids}, "stats": (tuple(kept), tuple(counted)),
                    "search": [(r.source_id, r.score) for r in results.results],
                    "consistent": (await h.check()).consistent}

    return anyio.run(main)


@pytest.mark.slow
def test_killed_sync_then_rerun_equals_uninterrupted(tmp_path: Path, postgres_cluster: PostgresCluster) -> None:
    reference = use_postgres(make_workspace(tmp_path / "reference"), postgres_cluster.fresh_database())
    run_sync(reference)
    expected = snapshot(reference)
    crashed = use_postgres(make_workspace(tmp_path / "crashed"), postgres_cluster.fresh_database())
    run_sync(crashed, kill_after=300)
    run_sync(crashed)
    got = snapshot(crashed)
    assert got["consistent"] and expected["consistent"]
    assert got["stats"][0] == got["stats"][1]  # the maintained BM25 statistics match a recount
    assert [d[:2] for d in got["docs"]] == [d[:2] for d in expected["docs"]] and len(got["docs"]) == 900
    assert got["chunks"] == expected["chunks"]
    assert got["search"] == expected["search"]
