"""Each replica's own keyword index on PostgreSQL (``store/postgres/follower.py``), on a real server:
two replicas (separate data folders) on one database. A write through one is found through the
other within a second; deletions follow; a gap in the change log (rows trimmed before a replica
read them) and a replica restarted after missing writes both converge to the same results as a
fresh replica; until its index is complete, a replica answers from SQL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest
from context_harness.store.keyword import replaced_entries
from context_harness.store.postgres import follower
from context_harness.store.postgres.follower import ReplicaKeywordIndex
from support.workspace import Workspace

pytestmark = pytest.mark.anyio
WORDS = "quokka wombat numbat bilby dingo echidna platypus wallaby possum kookaburra".split()
QUERIES = ["quokka", "wombat bilby", "echidna platypus", "dingo", "possum wallaby kookaburra", "note"]


def replica(workspace: Workspace, name: str, url: str) -> config_mod.Config:
    path = workspace.root / f"{name}.toml"
    path.write_text(f'[db]\npath = "{name}-data/ctx.sqlite"\nbackend = "postgres"\nurl = "{url}"\n'
                    '[embedding]\nprovider = "fake"\n[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
    return config_mod.load(path)


def write_notes(docs: Path, start: int, count: int) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(1 + i % 5))
        (docs / f"n{i:03}.md").write_text(f"# Note {i}\n\n{words} note {i}\n", encoding="utf-8")


async def ranked(harness: Harness) -> list[set[str]]:
    """What each query finds. Sets, not scores: an index updated in place still counts its deleted
    entries in term statistics until Tantivy merges them away, so scores differ from a fresh index's
    in the third decimal; which documents match may not."""
    out = []
    for query in QUERIES:
        hits = (await harness.search(SearchRequest(query=query, mode="keyword", limit=100))).results
        out.append({h.id for h in hits})
    return out


async def found_within(harness: Harness, query: str, want: set[str], seconds: float = 3.0) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        hits = (await harness.search(SearchRequest(query=query, mode="keyword", limit=50))).results
        if {h.source_id for h in hits} == want:
            return time.perf_counter() - started
        await anyio_sleep(0.02)
    raise AssertionError(f"{query!r}: not {sorted(want)} after {seconds} s")


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


async def test_replicas_follow_writes_deletes_gaps_and_restarts(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_notes(workspace.docs, 0, 40)
    async with Harness.open(replica(workspace, "a", pg_url)) as a, Harness.open(replica(workspace, "b", pg_url)) as b:
        assert isinstance(a.index, ReplicaKeywordIndex) and isinstance(b.index, ReplicaKeywordIndex)
        await a.sync()
        assert a.index.ready  # its own writes: caught up when the sync ended
        first = await ranked(a)
        assert all(await ranked(b))  # no index of its own yet: SQL answers while the follower builds one
        for _ in range(250):
            if b.index.ready:
                break
            await anyio_sleep(0.02)
        assert b.index.ready and await ranked(b) == first

        (workspace.docs / "n001.md").write_text("# Note 1\n\nzebrafinch sighting\n", encoding="utf-8")
        (workspace.docs / "n002.md").unlink()
        await a.sync()
        assert await found_within(b, "zebrafinch", {"n001.md"}) < 1.0  # through b, within a second
        hits = (await b.search(SearchRequest(query="note 2", mode="keyword", limit=50))).results
        assert "n002.md" not in {h.source_id for h in hits}

        # a gap: b misses writes while the log is trimmed past them
        b.index.close()
        b.index._thread = None  # type: ignore[union-attr]  # b stops following, as if partitioned
        write_notes(workspace.docs, 40, 10)
        await a.sync()
        with a.store.db.connection() as conn:  # type: ignore[union-attr]
            conn.execute("DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes)")
        b.index._stop.clear()  # type: ignore[union-attr]
        assert await ranked(b) == await ranked(a)  # the gap made b rebuild

    # a restart after missing writes: b's record is behind; it catches up on open
    write_notes(workspace.docs, 50, 5)
    async with Harness.open(replica(workspace, "a", pg_url)) as a:
        await a.sync()
        expected = await ranked(a)
    async with Harness.open(replica(workspace, "b", pg_url)) as b:
        assert await ranked(b) == expected
    async with Harness.open(replica(workspace, "fresh", pg_url)) as fresh:
        assert await ranked(fresh) == expected


async def test_a_replica_answers_from_sql_until_its_index_is_complete(workspace: Workspace, pg_url: str) -> None:
    fake.register()
    write_notes(workspace.docs, 0, 20)
    async with Harness.open(replica(workspace, "a", pg_url)) as a:
        await a.sync()
    async with Harness.open(replica(workspace, "late", pg_url)) as late:
        index = late.index
        assert isinstance(index, ReplicaKeywordIndex) and not index.ready
        index._start = lambda: None  # type: ignore[method-assign]  # no follower thread: stay unready
        index._thread = None
        original = index._pending
        index._pending = lambda: 10**9  # type: ignore[method-assign]  # too much to catch up inline
        hits = (await late.search(SearchRequest(query="quokka", mode="keyword", limit=50))).results
        assert hits and not index.ready  # SQL answered
        index._pending = original  # type: ignore[method-assign]
        index.catch_up()
        assert index.ready
        local = (await late.search(SearchRequest(query="quokka", mode="keyword", limit=50))).results
        assert {h.id for h in local} == {h.id for h in hits}


async def test_compaction_drops_replaced_entries_once_no_change_waits(workspace: Workspace, pg_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewritten notes leave replaced entries that skew BM25 statistics; ``compact`` re-indexes in one
    commit, but not while changes wait (it would index what the next catch-up replaces again), and it
    gives up, rolled back, when a change arrives while it runs."""
    fake.register()
    write_notes(workspace.docs, 0, 30)
    async with Harness.open(replica(workspace, "a", pg_url)) as a:
        index = a.index
        assert isinstance(index, ReplicaKeywordIndex)
        await a.sync()
        for i in range(0, 30, 2):
            (workspace.docs / f"n{i:03}.md").write_text(f"# Note {i}\n\nquokka quokka note {i} again\n", encoding="utf-8")
        await a.sync()
        index.close()  # no follower thread: this test decides when to compact
        assert replaced_entries(index.local.path) > 0
        skewed = await scored(a)

        seq = index._recorded()
        assert seq is not None
        index._write_record(seq - 1)  # a change waits
        assert not index.compact() and replaced_entries(index.local.path) > 0
        index.catch_up()

        batches = index._all_ids

        def a_change_after_the_first_batch():
            for n, ids in enumerate(batches()):
                yield ids
                if n == 0:
                    with a.store.db.connection() as conn:  # type: ignore[union-attr]
                        conn.execute("INSERT INTO changes(doc_id, source, source_id, kind, at) "
                                     "VALUES ('gone', 'filesystem:docs', 'gone.md', 'deleted', '2026-01-01T00:00:00Z')")

        monkeypatch.setattr(follower, "BATCH", 10)  # three batches
        index._all_ids = a_change_after_the_first_batch  # type: ignore[method-assign]
        before, replaced = await scored(a), replaced_entries(index.local.path)
        assert not index.compact()  # given up, rolled back: catching up comes first
        assert replaced_entries(index.local.path) == replaced > 0 and await scored(a) == before
        index._all_ids = batches  # type: ignore[method-assign]
        assert not index.compact()  # the change waits
        index.catch_up()
        assert index.compact() and replaced_entries(index.local.path) == 0
        assert not index.compact()  # nothing left to drop
        compacted = await scored(a)
    async with Harness.open(replica(workspace, "fresh", pg_url)) as fresh:
        assert isinstance(fresh.index, ReplicaKeywordIndex)
        fresh.index.catch_up()  # its own index, not SQL
        assert await scored(fresh) == compacted != skewed


async def scored(harness: Harness) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        hits = (await harness.search(SearchRequest(query=query, mode="keyword", limit=100))).results
        out.append(sorted(((h.id, h.score) for h in hits), key=lambda hit: (-hit[1], hit[0])))
    return out


async def test_the_sql_keyword_data_follows_updates_and_deletions(workspace: Workspace, pg_url: str) -> None:
    """Postings, lengths, ``tsv`` and the corpus statistics, written in one statement per batch: a
    deleted document leaves no postings, a rewritten one only its new terms, and the statistics are
    the sums over what is stored."""
    fake.register()
    write_notes(workspace.docs, 0, 12)
    async with Harness.open(replica(workspace, "a", pg_url)) as a:
        await a.sync()
        (workspace.docs / "n003.md").unlink()
        (workspace.docs / "n004.md").write_text("# Note 4\n\nplatypus platypus dingo\n", encoding="utf-8")
        await a.sync()
        with a.store.db.connection() as conn:  # type: ignore[union-attr]
            stray = conn.execute("SELECT count(*) FROM postings p WHERE NOT EXISTS "
                                 "(SELECT 1 FROM documents d WHERE d.id = p.doc_id)").fetchone()[0]
            four = dict(conn.execute("SELECT p.term, p.tf FROM postings p JOIN documents d ON d.id = p.doc_id "
                                     "WHERE d.source_id = 'n004.md' AND p.field = 'b'").fetchall())
            lengths = conn.execute("SELECT count(*) FROM documents d WHERE tsv IS NULL OR title_len != "
                                   "(SELECT coalesce(sum(tf), 0) FROM postings p WHERE p.doc_id = d.id AND field = 't') "
                                   "OR body_len != (SELECT coalesce(sum(tf), 0) FROM postings p "
                                   "WHERE p.doc_id = d.id AND field = 'b')").fetchone()[0]
            stats = conn.execute("SELECT documents, title_tokens, body_tokens FROM keyword_stats").fetchone()
            sums = conn.execute("SELECT count(*), sum(title_len), sum(body_len) FROM documents").fetchone()
        assert (stray, lengths) == (0, 0) and tuple(stats) == tuple(sums) and sums[0] == 11
        assert four == {"note": 1, "4": 1, "platypus": 2, "dingo": 1}  # the heading is in the body
        local = (await a.search(SearchRequest(query="platypus dingo", mode="keyword", limit=3))).results
        in_sql = a.index.sql.search("platypus dingo", None, 3)  # type: ignore[attr-defined]
        assert [h.doc_id for h in in_sql] == [r.id for r in local] and local[0].source_id == "n004.md"
