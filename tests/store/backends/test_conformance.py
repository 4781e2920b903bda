"""The storage backends' one conformance suite: every test runs on the embedded backend (SQLite +
Tantivy + vectors) and on PostgreSQL (a real server: ``support/postgres.py``), through the real
``Harness`` and the deterministic fake embedder.

Covered: sync, incremental updates, deletions, filters before the top-k cut (keyword, semantic,
hybrid), the shape of search results, ids stable across backends, an interrupted write leaving
nothing behind, ``ctx check``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import NotFound
from context_harness.models import SearchFilters, SearchRequest
from context_harness.store.records import DocumentRow, DocumentWrite, StoredChunk
from context_harness.store.schema import POSTGRES_SCHEMA_VERSION, SCHEMA_VERSION
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio

BACKENDS = ["embedded", "postgres"]


async def titles(h: Harness, query: str, **kw) -> list[str | None]:
    return [r.title for r in (await h.search(SearchRequest(query=query, **kw))).results]


async def test_sync_then_search_in_every_mode(harness: Harness) -> None:
    report = await harness.sync()
    assert [(s.source, s.added) for s in report.sources] == [("filesystem:docs", 3)]
    assert report.embedding is not None and report.embedding.pending == 0
    for mode in ("keyword", "semantic", "hybrid"):
        assert (await titles(harness, "tantivy search engine", mode=mode))[0] == "Search Engines", mode
    assert await titles(harness, "ranked", mode="keyword") == ["Search Engines"]  # stemming: ranks ~ ranked
    assert await titles(harness, "zyzzyva", mode="keyword") == []
    stats = await harness.stats()
    assert (stats.documents, stats.sources) == (3, 1) and stats.chunks >= 3


async def test_incremental_update_and_deletion(harness: Harness, workspace: Workspace) -> None:
    await harness.sync()
    again = (await harness.sync()).sources[0]
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
    workspace.write("notes.txt", "Notes about pelicans now.\n")
    (workspace.docs / "lua.md").unlink()
    changed = (await harness.sync()).sources[0]
    assert (changed.added, changed.updated, changed.deleted) == (0, 1, 1)
    assert await titles(harness, "pelicans", mode="keyword") == ["notes"]
    assert await titles(harness, "deployment", mode="keyword") == []
    assert await titles(harness, "sandbox timeout", mode="keyword") == []
    assert all(r.title != "Lua Sandbox" for r in (await harness.search(
        SearchRequest(query="sandbox timeout memory", mode="semantic"))).results)
    with pytest.raises(NotFound):
        await harness.get(next(iter(await deleted_ids(harness))))
    assert (await harness.stats()).documents == 2
    assert (await harness.check()).consistent


async def deleted_ids(harness: Harness) -> set[str]:
    from context_harness.store.records import document_id

    assert harness.store is not None
    doc_id = document_id("filesystem:docs", "lua.md")
    assert harness.store.document(doc_id) is None
    return {doc_id}


async def test_the_documents_under_some_paths_are_exactly_those_at_or_inside_them(harness: Harness,
                                                                                 workspace: Workspace) -> None:
    """What a live update re-reads: a path itself and what lies inside it as a folder, never a
    neighbour whose name merely starts the same (``a-b``, ``a0``, ``ab/``, ``a.md`` for ``a``)."""
    for name in ["a.md", "a/b.md", "a/c/d.md", "a-b.md", "a0.md", "ab/x.md", "é/x.md", "é-x.md"]:
        workspace.write(name, f"# {name}\n\nbody\n")
    await harness.sync()
    assert harness.store is not None
    under = harness.store.fingerprints("filesystem:docs", under=["a", "é", "notes.txt"])
    assert sorted(under) == ["a/b.md", "a/c/d.md", "notes.txt", "é/x.md"]
    assert sorted(harness.store.fingerprints("filesystem:docs", under=["a.md"])) == ["a.md"]


async def test_filters_apply_before_the_top_k_cut(harness: Harness, workspace: Workspace) -> None:
    for i in range(30):  # many better matches without the tag
        workspace.write(f"bulk/{i:02}.md", f"# Engines {i}\n\nengines engines engines engines search engines {i}\n")
    workspace.write("tagged.md", "---\ntitle: Tagged\ntags: [Special]\nupdated: 2020-01-02\n---\n"
                    "A single mention of engines among other words here and there.\n")
    await harness.sync()
    for mode in ("keyword", "semantic", "hybrid"):
        by_tag = await titles(harness, "engines", mode=mode, limit=1, filters=SearchFilters(tags=["special"]))
        assert by_tag == ["Tagged"], mode
        until = await titles(harness, "engines", mode=mode, limit=1, filters=SearchFilters(until="2021-01-01"))
        assert until == ["Tagged"], mode
    by_source = await harness.search(SearchRequest(query="engines", mode="keyword", limit=50,
                                                   filters=SearchFilters(source="filesystem")))
    assert len(by_source.results) == 33  # every document mentioning engines (lua.md does not)
    assert all(r.heading is None or r.heading == r.title for r in by_source.results)
    nothing = await titles(harness, "engines", mode="keyword", filters=SearchFilters(source="git"))
    assert nothing == []
    for pattern in ("file%", "filesystem:%", "_ilesystem"):  # a label is text, not a LIKE pattern
        assert await titles(harness, "engines", mode="keyword", filters=SearchFilters(source=pattern)) == []


async def test_result_shape(harness: Harness) -> None:
    await harness.sync()
    result = (await harness.search(SearchRequest(query="lua sandbox timeout", mode="hybrid"))).results[0]
    payload = result.model_dump(exclude_none=True)
    assert {"id", "score", "title", "source", "source_id", "updated_at", "snippet", "source_url"} <= set(payload)
    assert (result.title, result.source, result.source_id, result.chunk) == ("Lua Sandbox", "filesystem:docs",
                                                                             "lua.md", 0)
    assert "timeout" in result.snippet and result.id == result.id.lower()
    document = await harness.get(result.id)
    assert document.title == "Lua Sandbox" and document.chunks and "timeout" in document.body
    assert document.updated_at is not None and document.updated_at.startswith("2026-03-01")


async def test_an_interrupted_write_leaves_nothing_behind(harness: Harness) -> None:
    await harness.sync()
    store = harness.store
    assert store is not None
    before = store.counts()
    chunk = StoredChunk("c" * 32, 0, "a half written pelican", "h1", "")
    row = DocumentRow("d" * 24, "filesystem:docs", "half.md", None, "Half", None, None, None, "text/plain",
                      "a half written pelican", {}, [], "x", None)
    with pytest.raises(Exception):  # noqa: B017  a duplicate chunk id fails the transaction mid-way
        await harness.run_blocking(store.apply, "filesystem:docs", [DocumentWrite(row, [chunk, chunk])],
                                   [next(iter(store.all_ids()))])
    assert store.counts() == before
    assert store.document("d" * 24) is None
    assert await titles(harness, "pelican", mode="keyword") == []
    assert (await harness.check()).consistent


async def test_ids_are_the_same_on_every_backend(workspace: Workspace, pg_url: str, tmp_path: Path) -> None:
    fake.register()
    write_sample_docs(workspace)
    seen = []
    for backend in BACKENDS:
        async with Harness.open(backend_config(workspace, backend, pg_url)) as h:
            await h.sync()
            assert h.store is not None
            ids = sorted(h.store.all_ids())
            chunks = {doc_id: [c.id for c in h.store.chunks(doc_id)] for doc_id in ids}
            found = [(r.id, r.chunk) for r in (await h.search(SearchRequest(query="engines", mode="keyword"))).results]
            seen.append((ids, chunks, found))
    assert seen[0] == seen[1]


LONG = "# Guide\n\n" + "".join(f"## Part {i}\n\n" + f"filler words about topic {i}. " * 60 + "\n\n" for i in range(8)) \
    + "## Last\n\nThe pelican migrates at dawn.\n"


async def test_search_and_get_answer_the_same_on_every_backend_in_one_read_each(
        workspace: Workspace, pg_url: str) -> None:
    """Snippets placed in their chunk (a heading deep in a long note), and ``get``'s chunks: the same
    payloads on both backends; on PostgreSQL a keyword search and a ``get`` each make one read (one
    round trip: the chunks' places come with the summaries, a document's chunks with the document)."""
    fake.register()
    write_sample_docs(workspace)
    workspace.write("guide.md", LONG)
    seen = []
    for backend in BACKENDS:
        async with Harness.open(backend_config(workspace, backend, pg_url)) as h:
            await h.sync()
            await h.search(SearchRequest(query="start", mode="keyword"))  # a replica starts following
            for _ in range(100):  # ...and searches in SQL until its own index is complete
                if getattr(h.index, "ready", True):
                    break
                await anyio.sleep(0.1)
            reads = []
            db = getattr(h.store, "db", None)
            if db is not None:
                read = db.read
                db.read = lambda work, point=False, read=read, reads=reads: reads.append(point) or read(work, point)
            found = (await h.search(SearchRequest(query="pelican dawn", mode="keyword"))).results
            assert reads in ([], [False]) and found[0].heading == "Guide > Last" and found[0].chunk > 0
            documents = [(await h.get(r.id)).model_dump(exclude={"created_at"}) for r in found]  # a sync's time
            assert reads in ([], [False, True])
            hits = [r.model_dump() for r in (await h.search(SearchRequest(query="engines", mode="keyword"))).results]
            seen.append(([r.model_dump() for r in found], documents, hits))
    assert seen[0] == seen[1]


async def test_a_semantic_search_on_postgres_reads_the_embedder_identity_once_per_change(
        workspace: Workspace, pg_url: str) -> None:
    """The vectors' dimensions come from the recorded identity, a read on the primary: when the index
    loads, then again only after the vectors change, not on every search (a search on a standby would
    otherwise still reach the primary)."""
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, "postgres", pg_url)) as h:
        await h.sync()
        assert h.vectors is not None
        reads = []
        identity = h.vectors.identity
        h.vectors.identity = lambda: reads.append(1) or identity()  # type: ignore[method-assign]
        assert (await h.search(SearchRequest(query="sandbox memory", mode="semantic"))).results
        loaded = len(reads)
        for query in ("tantivy ranking", "deployment engines", "sandbox"):
            assert (await h.search(SearchRequest(query=query, mode="semantic"))).results
        assert loaded >= 1 and len(reads) == loaded
        workspace.write("extra.md", "# Extra\n\nA new note about sandboxes.\n")
        await h.sync()  # new vectors: the index refreshes, and reads the identity again
        assert (await h.search(SearchRequest(query="sandbox", mode="semantic"))).results and len(reads) > loaded


# -- links, related and recent (issue 29) ----------------------------------------------------------

LINKER = ("# Linker\n\nSee [search](search.md#top), [lua](../lua.md), [[Lua Sandbox|the sandbox]], "
          "[[missing page]], `[[InCode]]` and [web](https://example.org/x.md).\n")


def doc_id_of(source_id: str) -> str:
    from context_harness.store.records import document_id

    return document_id("filesystem:docs", source_id)


async def test_links_are_stored_resolved_and_backlinked(harness: Harness, workspace: Workspace) -> None:
    from context_harness.models import RelatedRequest

    workspace.write("guides/linker.md", LINKER)
    await harness.sync()
    linker, lua, search = doc_id_of("guides/linker.md"), doc_id_of("lua.md"), doc_id_of("guides/search.md")
    out = await harness.related(RelatedRequest(id=linker))
    assert [(i.id, i.why, i.link) for i in out.links_to] == [(search, "links_to", "search.md"),
                                                             (lua, "links_to", "../lua.md")]
    assert [(u.kind, u.target) for u in out.unresolved] == [("wiki", "missing page")]
    back = await harness.related(RelatedRequest(id=lua))
    assert [(i.id, i.why) for i in back.linked_from] == [(linker, "linked_from")]
    assert back.note is None and back.similar and all(i.why == "similar" and i.score is not None
                                                      and i.id != lua for i in back.similar)
    (workspace.docs / "guides/linker.md").unlink()
    await harness.sync()
    assert (await harness.related(RelatedRequest(id=lua))).linked_from == []
    assert harness.store is not None and harness.store.links_to(["lua.md", "lua sandbox"]) == []
    with pytest.raises(NotFound):
        await harness.related(RelatedRequest(id=linker))


async def test_mail_replies_link_across_eml_files(harness: Harness, workspace: Workspace) -> None:
    import datetime as dt

    from context_harness.models import RelatedRequest
    from support.office_files import message

    when = dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
    first = message("Boat launch", "Ann <ann@example.org>", "crew@example.org", "The boat launches at noon.",
                    when=when, message_id="<launch@example.org>")
    reply = message("Re: Boat launch", "Bob <bob@example.org>", "Ann <ann@example.org>", "I will bring rope.",
                    when=when + dt.timedelta(hours=1), message_id="<reply@example.org>",
                    in_reply_to="<launch@example.org>")
    (workspace.docs / "launch.eml").write_bytes(first.as_bytes())
    (workspace.docs / "reply.eml").write_bytes(reply.as_bytes())
    await harness.sync()
    parent, child = doc_id_of("launch.eml"), doc_id_of("reply.eml")
    assert [i.id for i in (await harness.related(RelatedRequest(id=child))).links_to] == [parent]
    assert [i.id for i in (await harness.related(RelatedRequest(id=parent))).linked_from] == [child]
    (workspace.docs / "launch.eml").unlink()
    await harness.sync()
    assert (await harness.related(RelatedRequest(id=child))).links_to == []


async def test_a_wikilink_follows_a_retitled_note(harness: Harness, workspace: Workspace) -> None:
    """The names a note is called by are its path and its title as stored now: after a new title the
    old one names nothing, and the new one resolves."""
    from context_harness.models import RelatedRequest

    workspace.write("pages/plan.md", "# Harvest plan\n\nRows of beans.\n")
    workspace.write("pages/index.md", "# Index\n\nSee [[Harvest plan]] and [[Sowing plan]].\n")
    await harness.sync()
    index, plan = doc_id_of("pages/index.md"), doc_id_of("pages/plan.md")
    out = await harness.related(RelatedRequest(id=index))
    assert [i.id for i in out.links_to] == [plan] and [u.target for u in out.unresolved] == ["Sowing plan"]
    workspace.write("pages/plan.md", "# Sowing plan\n\nRows of beans, sown in April.\n")
    await harness.sync()
    out = await harness.related(RelatedRequest(id=index))
    assert [i.id for i in out.links_to] == [plan] and [u.target for u in out.unresolved] == ["Harvest plan"]
    (workspace.docs / "pages/plan.md").unlink()
    await harness.sync()
    out = await harness.related(RelatedRequest(id=index))
    assert out.links_to == [] and sorted(u.target for u in out.unresolved) == ["Harvest plan", "Sowing plan"]


async def test_notes_are_written_through_either_backend_and_a_replica_without_the_folder_refuses(
        workspace: Workspace, backend: str, url: str | None) -> None:
    from context_harness.errors import NotConfigured
    from context_harness.models import NoteWriteRequest

    config = backend_config(workspace, backend, url)
    config.connectors.filesystem["docs"].writable = True
    async with Harness.open(config) as h:
        out = await h.note_write(NoteWriteRequest(source="docs", path="inbox/q.md", content="Quokkas write notes."))
        hits = (await h.search(SearchRequest(query="quokkas", mode="keyword"))).results
        assert [(r.id, r.version) for r in hits] == [(out.id, out.version)]
    elsewhere = config.model_copy(deep=True)  # the same database, on a host without the folder
    elsewhere.connectors.filesystem["docs"].root = workspace.docs.parent / "not-on-this-host"
    async with Harness.open(elsewhere) as replica:
        with pytest.raises(NotConfigured, match="this replica does not hold it" if backend == "postgres"
                           else "create it, or fix root"):
            await replica.note_write(NoteWriteRequest(source="docs", path="inbox/r.md", content="x"))
    assert not (workspace.docs.parent / "not-on-this-host").exists()


async def test_recent_lists_additions_updates_and_deletions_newest_first(harness: Harness,
                                                                        workspace: Workspace) -> None:
    from context_harness.errors import BadRequest
    from context_harness.models import RecentRequest

    await harness.sync()
    first = (await harness.recent(RecentRequest())).changes
    assert sorted((c.source_id, c.change) for c in first) == [
        ("guides/search.md", "added"), ("lua.md", "added"), ("notes.txt", "added")]
    workspace.write("notes.txt", "Notes about pelicans now.\n")
    await harness.sync()
    (workspace.docs / "lua.md").unlink()
    await harness.sync()
    changes = (await harness.recent(RecentRequest(since="1h", source="filesystem", limit=2))).changes
    assert [(c.source_id, c.change) for c in changes] == [("lua.md", "deleted"), ("notes.txt", "updated")]
    assert changes[0].title == "Lua Sandbox" and changes[0].id == doc_id_of("lua.md")
    assert (await harness.recent(RecentRequest(since="2999-01-01"))).changes == []
    assert (await harness.recent(RecentRequest(source="git"))).changes == []
    assert (await harness.recent(RecentRequest(source="%" * 60_000))).changes == []  # was "pattern too complex"
    assert (await harness.recent(RecentRequest(source="filesystem:%"))).changes == []
    with pytest.raises(BadRequest, match="since"):
        await harness.recent(RecentRequest(since="last tuesday"))


async def test_migrating_an_existing_database_fills_the_links(workspace: Workspace, backend: str,
                                                             url: str | None) -> None:
    """A database from before the links tables (schema one version back): opening it migrates and
    extracts the links of the documents already stored, without a sync."""
    from context_harness.models import RelatedRequest

    fake.register()
    write_sample_docs(workspace)
    workspace.write("guides/linker.md", LINKER)
    config = backend_config(workspace, backend, url)
    async with Harness.open(config) as h:
        await h.sync()
        assert h.store is not None
        if backend == "postgres":
            with h.store.db.transaction() as conn:  # type: ignore[attr-defined]
                conn.execute("DROP TABLE links, link_names, changes")
                conn.execute("UPDATE ctx_meta SET value = '1' WHERE key = 'schema_version'")
        else:
            with h.store.transaction() as conn:  # type: ignore[attr-defined]
                for table in ("links", "link_names", "changes"):
                    conn.execute(f"DROP TABLE {table}")
                conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    async with Harness.open(config) as h:
        assert h.store is not None
        assert h.store.schema_version == (POSTGRES_SCHEMA_VERSION if backend == "postgres" else SCHEMA_VERSION)
        out = await h.related(RelatedRequest(id=doc_id_of("guides/linker.md")))
        assert {i.id for i in out.links_to} == {doc_id_of("lua.md"), doc_id_of("guides/search.md")}
        back = await h.related(RelatedRequest(id=doc_id_of("lua.md")))
        assert [i.id for i in back.linked_from] == [doc_id_of("guides/linker.md")]


async def test_source_details_count_each_sources_text_in_bytes(harness: Harness, workspace: Workspace) -> None:
    """The console's sources dashboard: a source's text in UTF-8 bytes (not characters), the same on
    every backend, and how its last whole sync ended, with when."""
    workspace.write("café.md", "# Café\n\nThe café serves crème brûlée.\n")
    await harness.sync()
    listing = await harness.document_listing()
    expected = sum([len((await harness.get(d.id)).body.encode("utf-8")) for d in listing.documents])
    detail = (await harness.source_details())["filesystem:docs"]
    assert detail.text_bytes == expected > sum([len((await harness.get(d.id)).body) for d in listing.documents])
    assert detail.outcome == "ok" and detail.error is None and detail.ended_at is not None
