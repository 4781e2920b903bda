"""The keyword data of PostgreSQL documents, from the one analysis both backends share
(``common/analysis.py``): the terms of each field are computed in Python, so PostgreSQL ranks from
exactly the terms the embedded index holds, in every language (no text-search configuration is used).

Per document: ``postings`` rows (term, field ``t``/``b``, tf, the field's length in terms), its
``title_len``/``body_len`` and ``language``, and ``tsv``, a tsvector literal of the same terms at
their positions (title first, then a gap, then the body), which quoted phrases are matched against
as a tsquery of their analysed terms. A tsvector keeps positions up to ``MAX_POSITION`` and at most
``MAX_POSITIONS`` of each term (PostgreSQL's limits): a phrase further into a very long document is
not found by its positions (its terms still rank it).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from context_harness.common.analysis import AUTO, index_terms, resolve_language

log = logging.getLogger(__name__)

MAX_POSITION = 16_383  # the largest position a tsvector stores (PostgreSQL clamps larger ones)
MAX_POSITIONS = 256  # positions kept per term in a tsvector
MAX_TSV_BYTES = 1_000_000  # the terms' text a tsvector holds (PostgreSQL refuses past 1 MB)
NORM_OFFSET = 24  # Tantivy's field norms: lengths above this keep four significant bits...
EXACT_LENGTH = 40  # ...so every length up to this one is exact
RECOMPUTE_BATCH = 500  # documents re-analysed per statement by ``recompute``
PROGRESS_SECONDS = 10.0  # how often a long ``recompute`` logs its progress
LANGUAGES_KEY = "source_languages"  # ctx_meta: the configured source languages the keyword data was made with


@dataclass
class Analysed:
    """One document's keyword data, ready to store."""

    doc_id: str
    language: str
    title: list[str]
    body: list[str]

    @property
    def tsv(self) -> str:
        return tsvector_literal(self.title, self.body)


def analyse(doc_id: str, title: str | None, body: str, language: str) -> Analysed:
    """The terms of a document's title and body, analysed in ``language`` (its source's configured
    one; "auto": detected from its title and body, as the embedded index does, and stored)."""
    title = title or ""
    language = resolve_language(f"{title}\n{body}", language)
    return Analysed(doc_id, language, index_terms(title, language), index_terms(body, language))


def postings(docs: Iterable[Analysed]) -> Iterator[tuple[str, str, str, int, int]]:
    """``postings`` rows: (term, field, doc_id, tf, the field's length as ``fieldnorm`` keeps it)."""
    for doc in docs:
        for field, terms in (("t", doc.title), ("b", doc.body)):
            length = fieldnorm(len(terms))
            for term, tf in Counter(terms).items():
                yield term, field, doc.doc_id, tf, length


def fieldnorm(length: int) -> int:
    """A field's length in terms as Tantivy keeps it, in one byte a document: exact up to
    ``EXACT_LENGTH``, then rounded down to its four highest bits above 24 (40, 42, ... 54, 56, 60, 64, 68
    ...). BM25 in SQL normalises by it, so that both backends rank alike (the average length, as in
    Tantivy, comes from the exact totals of ``keyword_stats``)."""
    if length <= EXACT_LENGTH:
        return length
    above = length - NORM_OFFSET
    dropped = above.bit_length() - 4
    return NORM_OFFSET + (above >> dropped << dropped)


def store_fieldnorms(conn: Any) -> None:
    """Schema 9's fill: the lengths of stored postings (exact until then) as ``fieldnorm`` keeps them."""
    lengths = [int(r[0]) for r in conn.execute(f"SELECT DISTINCT dl FROM postings WHERE dl > {EXACT_LENGTH}")]
    if lengths:
        conn.execute("UPDATE postings p SET dl = n.norm FROM unnest(%s::int[], %s::int[]) AS n(len, norm) "
                     "WHERE p.dl = n.len", (lengths, [fieldnorm(n) for n in lengths]))


def tsvector_literal(title: list[str], body: list[str]) -> str:
    """The tsvector of the terms at their positions, as PostgreSQL reads it: title terms from 1 (weight
    A, for ``ts_rank_cd``), body terms after a gap (no phrase spans the two fields); bounded as the
    module notes say (a term first met past ``MAX_POSITION`` is kept there)."""
    positions: dict[str, list[int]] = {}
    for start, terms in ((1, title), (len(title) + 2, body)):
        placed = max(MAX_POSITION + 1 - start, 0)
        for at, term in enumerate(terms[:placed], start):
            kept = positions.get(term)
            if kept is None:
                positions[term] = [at]
            elif len(kept) < MAX_POSITIONS:
                kept.append(at)
        for term in terms[placed:]:
            if term not in positions:
                positions[term] = [MAX_POSITION]
    if sum(map(len, positions)) * 4 > MAX_TSV_BYTES:  # 4 bytes a character at most: exact only when near
        positions = _within_bytes(positions)
    titled = len(title)
    parts = [f"{quote_lexeme(term)}:{','.join(map(str, at))}" if at[0] > titled
             else f"{quote_lexeme(term)}:{','.join(f'{p}A' if p <= titled else str(p) for p in at)}"
             for term, at in positions.items()]
    return " ".join(parts)


def _within_bytes(positions: dict[str, list[int]]) -> dict[str, list[int]]:
    """The first terms of ``positions`` whose text stays within ``MAX_TSV_BYTES`` (in UTF-8)."""
    out: dict[str, list[int]] = {}
    size = 0
    for term, at in positions.items():
        size += len(term.encode("utf-8"))
        if size > MAX_TSV_BYTES:
            break
        out[term] = at
    return out


def quote_lexeme(term: str) -> str:
    """A term as a quoted tsvector/tsquery lexeme (taken as it is, never parsed by a configuration)."""
    if "'" in term or "\\" in term:
        term = term.replace("\\", "\\\\").replace("'", "''")
    return f"'{term}'"


def phrase_query(terms: list[str]) -> str:
    """A tsquery matching ``terms`` at consecutive positions."""
    return " <-> ".join(quote_lexeme(t) for t in terms)


def store_postings(conn: Any, docs: list[Analysed]) -> None:
    """Write the postings of ``docs`` (whose rows exist) in one COPY (the caller's transaction)."""
    with conn.cursor() as cur, cur.copy("COPY postings(term, field, doc_id, tf, dl) FROM STDIN") as copy:
        for row in postings(docs):
            copy.write_row(row)


def recompute(conn: Any, languages: Mapping[str, str], where: str, sources: list[str] | None = None) -> int:
    """Analyse stored documents again and replace their keyword data: every document (a schema
    migration: postings from PostgreSQL's ``english`` configuration become the shared analysis's
    terms), or those of ``sources`` (their configured language changed). Bounded: keyset batches of
    ``RECOMPUTE_BATCH``; progress logged every ``PROGRESS_SECONDS``. ``languages``: a source's
    configured language by its label (else "auto"). Returns how many documents."""
    chosen = "" if sources is None else " AND source = ANY(%(sources)s)"
    total = int(conn.execute(f"SELECT count(*) FROM documents WHERE true{chosen}", {"sources": sources}).fetchone()[0])
    if sources is None:
        conn.execute("TRUNCATE postings")
    else:
        conn.execute("DELETE FROM postings p USING documents d WHERE p.doc_id = d.id AND d.source = ANY(%s)",
                     (sources,))
    after, done, started, told = "", 0, time.monotonic(), time.monotonic()
    while True:
        rows = conn.execute(f"SELECT id, source, title, body FROM documents WHERE id > %(after)s{chosen} "
                            "ORDER BY id LIMIT %(batch)s",
                            {"after": after, "sources": sources, "batch": RECOMPUTE_BATCH}).fetchall()
        if not rows:
            break
        docs = [analyse(r[0], r[2], r[3], languages.get(r[1], AUTO)) for r in rows]
        store_postings(conn, docs)
        _update_documents(conn, docs)
        after, done = rows[-1][0], done + len(rows)
        if time.monotonic() - told >= PROGRESS_SECONDS:
            told = time.monotonic()
            log.info("%s: keyword data recomputed for %d of %d documents (%.0f s)", where, done, total,
                     told - started)
    conn.execute("UPDATE keyword_stats SET documents = s.n, title_tokens = s.t, body_tokens = s.b FROM ("
                 "SELECT count(*) AS n, coalesce(sum(title_len), 0) AS t, coalesce(sum(body_len), 0) AS b "
                 "FROM documents) s")
    conn.execute("DELETE FROM keyword_languages")
    conn.execute("INSERT INTO keyword_languages(language, documents) SELECT language, count(*) FROM documents "
                 "GROUP BY language")
    if done:
        log.info("%s: keyword data of %d documents recomputed in %.1f s", where, done, time.monotonic() - started)
    return done


def _update_documents(conn: Any, docs: list[Analysed]) -> None:
    """Set the keyword columns of stored documents (``recompute``)."""
    conn.execute(
        "UPDATE documents d SET language = u.language, title_len = u.title_len, body_len = u.body_len, "
        "tsv = u.tsv::tsvector FROM unnest(%s::text[], %s::text[], %s::int[], %s::int[], %s::text[]) "
        "u(id, language, title_len, body_len, tsv) WHERE d.id = u.id",
        ([d.doc_id for d in docs], [d.language for d in docs], [len(d.title) for d in docs],
         [len(d.body) for d in docs], [d.tsv for d in docs]))


def count_languages(conn: Any, change: Counter[str]) -> None:
    """Add ``change`` (negative: documents gone) to the documents counted per language."""
    change = Counter({k: v for k, v in change.items() if v})
    if not change:
        return
    conn.execute("INSERT INTO keyword_languages(language, documents) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                 "ON CONFLICT(language) DO UPDATE SET documents = keyword_languages.documents + excluded.documents",
                 (list(change), list(change.values())))


def recorded_languages(conn: Any) -> dict[str, str]:
    """The configured source languages the stored keyword data was made with (``ctx_meta``)."""
    row = conn.execute("SELECT value FROM ctx_meta WHERE key = %s", (LANGUAGES_KEY,)).fetchone()
    try:
        return dict(json.loads(row[0])) if row else {}
    except (TypeError, ValueError):
        return {}


def follow_languages(conn: Any, languages: Mapping[str, str], where: str) -> int:
    """Recompute the keyword data of the sources whose configured language differs from the one their
    documents were analysed with (``recorded_languages``), and record ``languages``; one process at
    a time (the caller's transaction holds the schema lock). Returns how many documents."""
    recorded = recorded_languages(conn)
    wanted = dict(sorted(languages.items()))
    if recorded == wanted:
        return 0
    changed = sorted(label for label in set(recorded) | set(wanted) if recorded.get(label) != wanted.get(label))
    done = recompute(conn, wanted, where, changed)
    conn.execute("INSERT INTO ctx_meta(key, value) VALUES(%s, %s) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (LANGUAGES_KEY, json.dumps(wanted)))
    return done
