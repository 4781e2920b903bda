"""Sync over real files, followed by real searches: add, edit, delete, rename, skips, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


async def titles(h: Harness, query: str, **kw) -> list[str]:
    response = await h.search(SearchRequest(query=query, **kw))
    return [r.title for r in response.results]


async def test_add_then_search_finds_documents_with_front_matter(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.total("added") == 3
        assert await titles(h, "sandbox") == ["Lua Sandbox"]
        doc = (await h.search(SearchRequest(query="sandbox"))).results[0]
        full = await h.get(doc.id)
        assert full.metadata["tags"] == ["lua", "security"]
        assert full.source == "filesystem:docs" and full.source_id == "lua.md"
        assert full.source_url == (sample_docs.docs / "lua.md").resolve().as_uri()
        assert full.updated_at == "2026-03-01T00:00:00Z"
        assert "---" not in full.body and full.chunks[0].index == 0
        # Title falls back to the first H1, then to the file name.
        assert "Search Engines" in await titles(h, "tantivy")
        assert "notes" in await titles(h, "deployment")


async def test_resync_without_change_touches_nothing(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        again = await h.sync()
        assert again.total("unchanged") == 3
        assert again.total("added") + again.total("updated") + again.total("deleted") == 0


async def test_edit_updates_and_keeps_the_id(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        before = (await h.search(SearchRequest(query="tantivy"))).results[0]
        path = sample_docs.write("guides/search.md", "# Search Engines\n\nNow about quokkas instead.\n")
        os.utime(path, ns=(1, 1_000_000_000))  # a new mtime even on coarse clocks
        report = await h.sync()
        assert report.total("updated") == 1 and report.total("unchanged") == 2
        assert await titles(h, "tantivy") == []
        after = (await h.search(SearchRequest(query="quokkas"))).results[0]
        assert after.id == before.id


async def test_touch_without_content_change_is_unchanged(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        os.utime(sample_docs.docs / "notes.txt", ns=(5, 5_000_000_000))
        report = await h.sync()
        assert report.total("updated") == 0 and report.total("unchanged") == 3


async def test_delete_and_rename_propagate(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        (sample_docs.docs / "notes.txt").unlink()
        (sample_docs.docs / "lua.md").rename(sample_docs.docs / "sandbox.md")
        report = await h.sync()
        assert report.total("deleted") == 2 and report.total("added") == 1
        assert await titles(h, "deployment") == []
        hits = (await h.search(SearchRequest(query="sandbox"))).results
        assert [r.source_id for r in hits] == ["sandbox.md"]
        stats = await h.stats()
        assert stats.documents == 2


async def test_symlink_escape_is_skipped_and_counted(sample_docs, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nclassified payroll numbers\n")
    (sample_docs.docs / "escape.md").symlink_to(outside / "secret.md")
    (sample_docs.docs / "escape-dir").symlink_to(outside, target_is_directory=True)
    (sample_docs.docs / "inside.md").symlink_to(sample_docs.docs / "lua.md")
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.sources[0].skipped_reasons["symlink_escape"] == 2
        assert await titles(h, "payroll classified") == []
        assert report.total("added") == 4  # three files plus the symlink that stays inside


async def test_binary_non_utf8_and_large_files_are_skipped(sample_docs) -> None:
    (sample_docs.docs / "blob.md").write_bytes(b"# x\x00\x01\x02 binary")
    (sample_docs.docs / "latin1.md").write_bytes("# Caf\xe9 cr\xe8me".encode("latin-1"))
    sample_docs.write_config("[connectors.filesystem.docs.x]\n" if False else "")
    (sample_docs.docs / "big.md").write_text("# Big\n\n" + "word " * 1000)
    text = sample_docs.config_path.read_text().replace('root = "docs"', 'root = "docs"\nmax_file_size = 2000')
    sample_docs.config_path.write_text(text)
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        reasons = report.sources[0].skipped_reasons
        assert reasons == {"binary": 1, "not_utf8": 1, "too_large": 1}
        assert report.total("added") == 3
        sources = (await h.sources()).sources
        assert "binary 1" in (sources[0].notes or "")


async def test_gitignore_and_excludes_are_honoured(sample_docs) -> None:
    sample_docs.write(".gitignore", "drafts/\n*.secret.md\n")
    sample_docs.write("drafts/wip.md", "# WIP\n\nunfinished zebra thoughts\n")
    sample_docs.write("a.secret.md", "# Hidden\n\nzebra password\n")
    sample_docs.write("sub/.gitignore", "local.md\n")
    sample_docs.write("sub/local.md", "# Local\n\nzebra local notes\n")
    sample_docs.write("sub/kept.md", "# Kept\n\nzebra kept notes\n")
    sample_docs.write("node_modules/pkg/readme.md", "# Pkg\n\nzebra package\n")
    sample_docs.write(".git/notes.md", "# Git\n\nzebra git\n")
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert await titles(h, "zebra") == ["Kept"]
    text = sample_docs.config_path.read_text().replace('root = "docs"', 'root = "docs"\nrespect_gitignore = false\n'
                                                        'exclude_globs = ["sub/kept.md"]')
    sample_docs.config_path.write_text(text)
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert sorted(await titles(h, "zebra")) == ["Hidden", "Local", "WIP"]


async def test_limit_never_skips_items_in_later_syncs(workspace) -> None:
    for i in range(7):
        workspace.write(f"d{i}.md", f"# Doc {i}\n\nshared walrus text {i}\n")
    async with Harness.open(workspace.config()) as h:
        first = await h.sync(limit=3)
        assert first.total("added") == 3 and first.sources[0].limited
        second = await h.sync(limit=3)
        assert second.total("added") == 3 and second.total("unchanged") == 3
        third = await h.sync(limit=3)
        assert third.total("added") == 1 and not third.sources[0].limited
        assert len((await h.search(SearchRequest(query="walrus", limit=50))).results) == 7


async def test_dry_run_writes_nothing(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync(dry_run=True)
        assert report.total("added") == 3 and report.sources[0].dry_run
        assert (await h.stats()).documents == 0
        assert (await h.search(SearchRequest(query="sandbox"))).results == []


async def test_full_resync_reindexes_everything(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        report = await h.sync(full=True)
        assert report.total("updated") == 3


async def test_chunking_change_rechunks_on_next_sync(sample_docs) -> None:
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
    sample_docs.config_path.write_text(sample_docs.config_path.read_text() + "\n[chunking]\nmax_tokens = 64\n")
    async with Harness.open(sample_docs.config()) as h:
        report = await h.sync()
        assert report.total("updated") == 3


async def test_removed_connector_documents_are_pruned_by_sync_all(sample_docs, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text("# Other\n\nplatypus\n")
    sample_docs.config_path.write_text(sample_docs.config_path.read_text()
                                       + f'\n[connectors.filesystem.other]\nroot = "{other}"\n')
    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        assert await titles(h, "platypus") == ["Other"]
        assert await titles(h, "platypus", filters={"source": "filesystem:docs"}) == []
    sample_docs.write_config()
    async with Harness.open(sample_docs.config()) as h:
        listed = {s.name: s for s in (await h.sources()).sources}
        assert listed["filesystem:other"].configured is False
        report = await h.sync()
        assert any(s.source == "filesystem:other" and s.deleted == 1 for s in report.sources)
        assert await titles(h, "platypus") == []


async def test_sync_targets(sample_docs) -> None:
    from context_harness.errors import BadRequest

    async with Harness.open(sample_docs.config()) as h:
        assert [s.source for s in (await h.sync("filesystem")).sources] == ["filesystem:docs"]
        assert [s.source for s in (await h.sync("filesystem:docs")).sources] == ["filesystem:docs"]
        with pytest.raises(BadRequest, match="filesystem:docs"):
            await h.sync("git:nope")


async def test_missing_root_is_reported_not_deleted(sample_docs) -> None:
    from context_harness.errors import NotConfigured

    async with Harness.open(sample_docs.config()) as h:
        await h.sync()
        sample_docs.docs.rename(sample_docs.root / "moved")
        with pytest.raises(NotConfigured, match="root"):
            await h.sync()
        source = (await h.sources()).sources[0]
        assert not source.healthy and "does not exist" in source.notes
        assert source.document_count == 3
