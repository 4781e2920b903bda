"""BM25 in SQL (``keyword_index = "database"``) scores as the embedded index (Tantivy) does: the same
terms (``common/analysis.py``), the same IDF, and field lengths kept as Tantivy keeps them (exact up to
40 terms, then to four significant bits: ``postings.fieldnorm``), so long documents rank alike too."""

from __future__ import annotations

import random

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest
from context_harness.store.postgres.postings import fieldnorm
from context_harness.store.schema import POSTGRES_SCHEMA_VERSION
from support.workspace import Workspace, backend_config

pytestmark = pytest.mark.anyio

WORDS = ("river bridge harbour lantern meadow orchard granite copper violet thunder quiet market "
         "station garden window ladder").split()


def test_fieldnorm_is_exact_to_40_then_keeps_four_significant_bits() -> None:
    assert [fieldnorm(n) for n in (0, 1, 39, 40, 41, 42, 43, 55, 56, 59, 60, 100, 1000)] == \
        [0, 1, 39, 40, 40, 42, 42, 54, 56, 56, 60, 96, 984]
    assert all(fieldnorm(n) <= n < fieldnorm(n) * 1.125 + 1 for n in range(1, 100_000))  # an eighth at most


async def scores(config, query: str) -> dict[str, float]:
    async with Harness.open(config) as h:
        await h.sync()
        return {r.source_id: r.score for r in (await h.search(SearchRequest(query=query, mode="keyword",
                                                                            limit=50))).results}


async def test_bm25_in_sql_scores_long_documents_as_the_embedded_index(workspace: Workspace,
                                                                      pg_url: str) -> None:
    fake.register()
    rng = random.Random(7)
    for i in range(30):  # bodies of 5 to 400 words: most lengths are rounded by the field norm
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 400)))
        workspace.write(f"d{i:02}.md", f"# {rng.choice(WORDS).title()} {i}\n\n{body}\n")
    embedded = await scores(backend_config(workspace, "embedded", None), "copper lantern harbour")
    in_sql = await scores(backend_config(workspace, "postgres-sql", pg_url), "copper lantern harbour")
    assert len(embedded) > 20 and set(embedded) == set(in_sql)
    assert sorted(embedded, key=lambda k: (-embedded[k], k)) == sorted(in_sql, key=lambda k: (-in_sql[k], k))
    for source_id, score in embedded.items():
        assert in_sql[source_id] == pytest.approx(score, rel=1e-4), source_id


async def test_a_database_of_exact_lengths_keeps_them_as_field_norms_once_opened(workspace: Workspace,
                                                                                pg_url: str) -> None:
    """Schema 9: postings written before it held exact lengths; opening the database rounds them."""
    fake.register()
    workspace.write("long.md", "# Long\n\n" + " ".join(WORDS * 20) + "\n")  # 320 terms: kept as 312
    workspace.write("short.md", "# Short\n\ncopper lantern\n")
    config = backend_config(workspace, "postgres-sql", pg_url)
    async with Harness.open(config) as h:
        await h.sync()
        before = await h.search(SearchRequest(query="copper", mode="keyword"))
        with h.store.db.transaction() as conn:  # type: ignore[union-attr]
            assert conn.execute("SELECT DISTINCT dl FROM postings WHERE field = 'b' ORDER BY dl").fetchall() == \
                [(3,), (312,)]
            conn.execute("UPDATE postings SET dl = 320 WHERE dl = 312")
            conn.execute("UPDATE ctx_meta SET value = '8' WHERE key = 'schema_version'")
    async with Harness.open(config) as h:
        assert h.store is not None and h.store.schema_version == POSTGRES_SCHEMA_VERSION  # 9 and later
        with h.store.db.transaction() as conn:  # type: ignore[union-attr]
            assert conn.execute("SELECT DISTINCT dl FROM postings WHERE field = 'b' ORDER BY dl").fetchall() == \
                [(3,), (312,)]
        after = await h.search(SearchRequest(query="copper", mode="keyword"))
        assert [(r.id, round(r.score, 6)) for r in after.results] == [(r.id, round(r.score, 6)) for r in before.results]
