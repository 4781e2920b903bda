"""Keyword ranking inside PostgreSQL: BM25 over whole documents from the postings and corpus
statistics that every write maintains (``documents.py``), title boosted as in the embedded index.

PostgreSQL's own ``ts_rank`` is not BM25 (no inverse document frequency, no length normalisation
against the corpus average); on SciFact it ranks far below (``benchmarks/postgres.py`` measures
both), so the score here is Okapi BM25 with Tantivy's parameters (k1 1.2, b 0.75, the same IDF).
Terms come from the analysis both backends share (``common/analysis.py``): documents' terms are
written with them (``postings.py``), and a query looks for its words as the analysis of each language
present makes them (``keyword_languages``, read in the same read as the ranking). Quoted phrases are
required: a tsquery of their analysed terms at consecutive positions, matched against each document's
``tsv`` of the same terms. Filters are a ``WHERE`` on the documents, so they apply before the
``LIMIT``. Queries are reads serving a request (``Database.read``: the hot standby when there is one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from context_harness.common.analysis import UNDETERMINED, phrase_terms, query_terms
from context_harness.store.keyword import Stemmer
from context_harness.store.postgres.database import Database
from context_harness.store.postgres.documents import filter_sql
from context_harness.store.postgres.postings import phrase_query, quote_lexeme
from context_harness.store.records import DocumentHit, IndexedDocument, KeywordFilters

K1, B = 1.2, 0.75
MAX_QUERY_CHARS = 4000
MAX_PHRASES = 8
MAX_QUERY_TERMS = 64
_PHRASE = re.compile(r'"([^"]*)"')
# The languages of the stored documents, the most common first (as the embedded index orders them): a
# query is analysed for each.
_LANGUAGES = "SELECT language FROM keyword_languages WHERE documents > 0 ORDER BY documents DESC, language"

_SEARCH = """
WITH q AS MATERIALIZED (SELECT DISTINCT term FROM unnest(%(terms)s::text[]) term),
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
        self.seen_languages: list[str] = []  # as the last query read them
        self.stemmer = Stemmer(lambda: self.seen_languages)  # for snippets only: which words to highlight

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
        words = _PHRASE.sub(lambda m: " " + m.group(1) + " ", text).replace('"', " ")
        named: dict[str, object] = {"title_boost": self.title_boost, "k1": K1, "b": B, "limit": limit}
        if where:
            for i, value in enumerate(params):
                named[f"f{i}"] = value

        def ranked(conn: Any) -> list[tuple]:
            languages = self._languages(conn)
            named["terms"] = query_terms(words, languages)[:MAX_QUERY_TERMS]
            conditions = [_named(where, len(params))] if where else []
            for i, phrase in enumerate(phrases):
                tsquery = _phrase_tsquery(phrase, languages)
                if tsquery:
                    named[f"p{i}"] = tsquery
                    conditions.append(f"d.tsv @@ %(p{i})s::tsquery")
            if not named["terms"]:
                return []
            sql = _SEARCH.format(where=("JOIN documents d ON d.id = h.doc_id WHERE " + " AND ".join(conditions))
                                 if conditions else "")
            return conn.execute(sql, named).fetchall()

        return [DocumentHit(doc_id, float(score)) for doc_id, score in self.db.read(ranked)]

    def ts_rank_search(self, text: str, limit: int) -> list[DocumentHit]:
        """PostgreSQL's own ``ts_rank_cd`` over OR-ed query terms (what BM25 is measured against)."""
        def ranked(conn: Any) -> list[tuple]:
            terms = query_terms(text[:MAX_QUERY_CHARS].replace('"', " "), self._languages(conn))[:MAX_QUERY_TERMS]
            if not terms:
                return []
            return conn.execute("SELECT d.id, ts_rank_cd(d.tsv, q.tq, 1) AS score FROM documents d, "
                                "(SELECT %s::tsquery AS tq) q WHERE d.tsv @@ q.tq ORDER BY score DESC, d.id LIMIT %s",
                                (" | ".join(quote_lexeme(t) for t in terms), limit)).fetchall()

        return [DocumentHit(i, float(s)) for i, s in self.db.read(ranked)]

    def stem(self, word: str) -> str | None:
        """The indexed form of one word, in the most common language of the documents (``Stemmer``)."""
        return self.stemmer.stem(word)

    def term_weights(self, text: str) -> dict[str, float]:
        """Every analysed word of a query with its BM25 IDF in the bodies (what a snippet shows)."""
        sql = ("WITH q AS MATERIALIZED (SELECT DISTINCT term FROM unnest(%s::text[]) term) "
               "SELECT q.term, (SELECT count(*) FROM postings p WHERE p.term = q.term AND p.field = 'b'), "
               "(SELECT documents FROM keyword_stats) FROM q")

        def weighed(conn: Any) -> list[tuple]:
            terms = query_terms(text.replace('"', " ")[:MAX_QUERY_CHARS], self._languages(conn))[:MAX_QUERY_TERMS]
            return conn.execute(sql, (terms,)).fetchall() if terms else []

        rows = self.db.read(weighed)
        return {term: math.log(1 + (max(n, 1) - df + 0.5) / (df + 0.5)) for term, df, n in rows}

    def languages(self) -> list[str]:
        """The languages of the stored documents, the most common first, as the last query read them."""
        return self.seen_languages

    def _languages(self, conn: Any) -> list[str]:
        """The languages of the stored documents (none: an empty store), remembered for ``stem``."""
        self.seen_languages = [r[0] for r in conn.execute(_LANGUAGES).fetchall()]
        return self.seen_languages


def _phrase_tsquery(phrase: str, languages: list[str]) -> str | None:
    """A tsquery of ``phrase``: its terms at consecutive positions, as the analysis of any language
    present makes them (one alternative each); None when it has no terms."""
    alternatives = dict.fromkeys(tuple(phrase_terms(phrase, language)) for language in languages or [UNDETERMINED])
    shown = [f"({phrase_query(list(terms))})" for terms in alternatives if terms]
    return " | ".join(shown) or None


def _named(where: str, count: int) -> str:
    """``where`` with its positional ``%s`` turned into ``%(f0)s``, ``%(f1)s`` ... (one query, named)."""
    parts = where.split("%s")
    assert len(parts) == count + 1
    return "".join(part + (f"%(f{i})s" if i < count else "") for i, part in enumerate(parts))
