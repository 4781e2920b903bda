"""``ctx db migrate --to postgres``: an embedded workspace copied into PostgreSQL keeps its ids, chunks,
vectors and embedder identity, so nothing is embedded again and searches find the same documents."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import BadRequest
from context_harness.models import SearchRequest
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio


async def found(h: Harness, query: str, mode: str) -> list[str]:
    return [r.id for r in (await h.search(SearchRequest(query=query, mode=mode))).results]


async def test_migrate_copies_everything_without_embedding_again(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, "embedded", None)) as embedded:
        await embedded.sync()
        before = await embedded.stats()
        expected = {mode: await found(embedded, "search engines sandbox", mode) for mode in ("keyword", "hybrid")}
        report = await embedded.migrate_to_postgres(pg_url)
        assert (report.documents, report.chunks) == (before.documents, before.chunks)
        assert report.vectors == before.embedding["vectors"] > 0
        assert report.embedder == before.embedding["identity"]
        assert "@" not in report.target and report.target.startswith("postgresql://")
        with pytest.raises(BadRequest, match="already holds 3 documents"):
            await embedded.migrate_to_postgres(pg_url)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as moved:
        after = await moved.stats()
        assert (after.documents, after.chunks) == (before.documents, before.chunks)
        assert after.embedding["pending_chunks"] == 0 and after.embedding["mismatch"] is False
        assert (await moved.embed()).embedded == 0  # nothing left to embed
        for mode, ids in expected.items():
            assert await found(moved, "search engines sandbox", mode) == ids, mode
        again = (await moved.sync()).sources[0]
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
        assert (await moved.check()).consistent
        with pytest.raises(BadRequest, match="on postgres already"):
            await moved.migrate_to_postgres(pg_url)


def test_the_command_migrates_and_never_prints_the_password(workspace: Workspace, pg_url: str) -> None:
    import json
    import os

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from support.cli import run_ctx

    write_sample_docs(workspace)
    workspace.write_config()  # embedded, embeddings disabled
    assert run_ctx("sync", "--config", str(workspace.config_path), cwd=workspace.root).returncode == 0
    missing = run_ctx("db", "migrate", "--to", "postgres", "--config", str(workspace.config_path), cwd=workspace.root)
    if "CTX_DATABASE_URL" not in os.environ:
        assert missing.returncode == 1 and "--url" in missing.stderr
    done = run_ctx("db", "migrate", "--to", "postgres", "--url", pg_url, "--json", "--config",
                   str(workspace.config_path), cwd=workspace.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["documents"], report["vectors"], report["embedder"]) == (3, 0, None)
    secret = make_conninfo(**{**conninfo_to_dict(pg_url), "password": "hunter2-secret"})
    again = run_ctx("db", "migrate", "--to", "postgres", "--url", secret, "--config", str(workspace.config_path),
                    cwd=workspace.root)
    assert again.returncode == 1 and "hunter2-secret" not in again.stderr + again.stdout
    assert "already holds 3 documents" in again.stderr
