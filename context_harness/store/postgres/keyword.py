"""Keyword ranking inside PostgreSQL: BM25 over whole documents from the postings and corpus
statistics that every write maintains (``documents.py``), title boosted as in the embedded index.

PostgreSQL's own ``ts_rank`` is not BM25 (no inverse document frequency, no length normalisation
against the corpus average); on SciFact it ranks far below (``benchmarks/postgres.py`` measures
both), so the score here is Okapi BM25 with Tantivy's parameters (k1 1.2, b 0.75, the same IDF).
Terms come from PostgreSQL's ``english`` configuration (Snowball stemmer, stop words dropped) for
documents and queries alike; quoted phrases are required (``phraseto_tsquery``). Filters are a
``WHERE`` on the documents, so they apply before the ``LIMIT``. Queries are reads serving a request
(``Database.read``: the hot standby when there is one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from context_harness.store.keyword import Stemmer
from context_harness.store.postgres.database import Database
from context_harness.store.postgres.documents import filter_sql
from context_harness.store.records import DocumentHit, IndexedDocument, KeywordFilters

K1, B = 1.2, 0.75
MAX_QUERY_CHARS = 4000
MAX_PHRASES = 8
_PHRASE = re.compile(r'"([^"]*)"')

_SEARCH = """
WITH q AS MATERIALIZED (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(text)s)) LIMIT 64),
s AS (SELECT greatest(documents, 1)::float8 AS n,
             greatest(title_tokens, 1)::float8 / greatest(documents, 1) AS avg_t,
             greatest(body_tokens, 1)::float8 / greatest(documents, 1) AS avg_b FROM keyword_stats),
hits AS MATERIALIZED (  -- each query term's postings through the index, with its document frequency
    SELECT p.doc_id, p.field, p.tf, p.dl, count(*) OVER (PARTITION BY p.term, p.field)::float8 AS df
    FROM q CROSS JOIN LATERAL (SELECT * FROM postings WHERE postings.term = q.term) p)
SELECT h.doc_id, sum(
    (CASE h.field WHEN 't' THEN %(title_boost)s ELSE 1.0 END)
    * ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
    * h.tf * (%(k1)s + 1)
    / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.dl / (CASE h.field WHEN 't' THEN s.avg_t ELSE s.avg_b END)))) AS score
FROM hits h
CROSS JOIN s
{where}
GROUP BY h.doc_id
ORDER BY score DESC, h.doc_id
LIMIT %(limit)s
"""


class PgKeywordIndex:
    """``KeywordRanking`` over the tables ``PgDocumentStore`` writes; nothing to keep apart."""

    rebuilt = False

    def __init__(self, db: Database, title_boost: float = 0.25) -> None:
        self.db = db
        self.title_boost = title_boost
        self.stemmer = Stemmer()  # for snippets only: which words of a text to highlight

    # -- writes: the documents' own transaction keeps the keyword data -------------------------

    @contextmanager
    def session(self) -> Iterator[PgKeywordIndex]:
        yield self

    def replace(self, doc_ids: Iterable[str], documents: Iterable[IndexedDocument]) -> None:
        pass

    def recreate(self) -> None:
        pass

    def doc_id_counts(self) -> dict[str, int]:
        """Documents with keyword data (every stored one: it commits with them)."""
        with self.db.connection() as conn:
            return {r[0]: 1 for r in conn.execute("SELECT id FROM documents")}

    # -- queries -------------------------------------------------------------------------------

    def search(self, text: str, filters: KeywordFilters | None, limit: int) -> list[DocumentHit]:
        """The top ``limit`` documents by BM25, ties broken by document id."""
        text = text[:MAX_QUERY_CHARS]
        where, params = filter_sql(filters.source, filters.tags, filters.since, filters.until) if filters else ("", [])
        phrases = [p for p in _PHRASE.findall(text) if p.strip()][:MAX_PHRASES]
        named: dict[str, object] = {"text": _PHRASE.sub(lambda m: " " + m.group(1) + " ", text).replace('"', " "),
                                    "title_boost": self.title_boost, "k1": K1, "b": B, "limit": limit}
        conditions = []
        if where:
            for i, value in enumerate(params):
                named[f"f{i}"] = value
            conditions.append(_named(where, len(params)))
        for i, phrase in enumerate(phrases):
            named[f"p{i}"] = phrase
            conditions.append(f"d.tsv @@ phraseto_tsquery('english', %(p{i})s)")
        sql = _SEARCH.format(where=("JOIN documents d ON d.id = h.doc_id WHERE " + " AND ".join(conditions))
                             if conditions else "")
        rows = self.db.read(lambda conn: conn.execute(sql, named).fetchall())
        return [DocumentHit(doc_id, float(score)) for doc_id, score in rows]

    def ts_rank_search(self, text: str, limit: int) -> list[DocumentHit]:
        """PostgreSQL's own ``ts_rank_cd`` over OR-ed query terms (what BM25 is measured against)."""
        sql = ("WITH q AS (SELECT to_tsquery('english', coalesce(string_agg(quote_literal(lexeme), ' | '), '')) AS tq "
               "FROM unnest(to_tsvector('english', %s))) "
               "SELECT d.id, ts_rank_cd(d.tsv, q.tq, 1) AS score FROM documents d, q WHERE d.tsv @@ q.tq "
               "ORDER BY score DESC, d.id LIMIT %s")
        rows = self.db.read(lambda conn: conn.execute(sql, (text[:MAX_QUERY_CHARS], limit)).fetchall())
        return [DocumentHit(i, float(s)) for i, s in rows]

    def terms(self, text: str) -> list[str]:
        rows = self.db.read(lambda conn: conn.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY positions[1]",
            (text[:MAX_QUERY_CHARS],)).fetchall())
        return [r[0] for r in rows]

    def stem(self, word: str) -> str | None:
        """The indexed form of one word, by the embedded analyser (English Snowball, as PostgreSQL's)."""
        return self.stemmer.stem(word)

    def term_weights(self, text: str) -> dict[str, float]:
        """Every analysed word of a query with its BM25 IDF in the bodies (what a snippet shows)."""
        sql = ("WITH q AS MATERIALIZED (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %s)) "
               "LIMIT 64) SELECT q.term, (SELECT count(*) FROM postings p WHERE p.term = q.term AND p.field = 'b'), "
               "(SELECT documents FROM keyword_stats) FROM q")
        rows = self.db.read(lambda conn: conn.execute(sql, (text.replace('"', " ")[:MAX_QUERY_CHARS],)).fetchall())
        return {term: math.log(1 + (max(n, 1) - df + 0.5) / (df + 0.5)) for term, df, n in rows}


def _named(where: str, count: int) -> str:
    """``where`` with its positional ``%s`` turned into ``%(f0)s``, ``%(f1)s`` ... (one query, named)."""
    parts = where.split("%s")
    assert len(parts) == count + 1
    return "".join(part + (f"%(f{i})s" if i < count else "") for i, part in enumerate(parts))
