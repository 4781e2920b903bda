"""The live index over real files and the real watcher: what is saved is searchable while serving."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.core.live import LiveIndex
from context_harness.errors import NotConfigured
from context_harness.ingest.sync import DocumentChanges
from context_harness.models import SearchRequest, SourceOut
from context_harness.store.records import document_id
from support.waiting import source_ids, wait_for

pytestmark = pytest.mark.anyio


async def shows(h: Harness, query: str, expected: list[str]) -> None:
    async def check() -> bool:
        return await source_ids(h, query) == expected
    await wait_for(check, f"search {query!r} gives {expected}")


async def status(h: Harness) -> SourceOut:
    return (await h.sources()).sources[0]


async def test_created_edited_renamed_and_deleted_files_are_reflected(workspace) -> None:
    workspace.write("old.md", "# Old\n\nmarmot notes\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "marmot", ["old.md"])  # sync on start
        workspace.write("new.md", "# New\n\nplatypus sightings\n")
        await shows(h, "platypus", ["new.md"])
        workspace.write("new.md", "# New\n\nwombat sightings\n")
        await shows(h, "wombat", ["new.md"])
        assert await source_ids(h, "platypus") == []
        os.rename(workspace.docs / "new.md", workspace.docs / "renamed.md")
        await shows(h, "wombat", ["renamed.md"])
        (workspace.docs / "old.md").unlink()
        await shows(h, "marmot", [])
        state = await status(h)
        assert state.watch == "watched" and state.last_outcome == "ok" and state.document_count == 1


async def test_an_atomic_save_and_folders_moved_in_and_out(workspace, tmp_path: Path) -> None:
    workspace.write("note.md", "# Note\n\nfirst draft about herons\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "herons", ["note.md"])
        tmp = workspace.docs / ".note.md.swp.tmp"  # an editor's save: write a temporary file, rename it
        tmp.write_text("# Note\n\nfinal text about egrets\n")
        os.replace(tmp, workspace.docs / "note.md")
        await shows(h, "egrets", ["note.md"])
        assert await source_ids(h, "herons") == []
        outside = tmp_path / "elsewhere" / "project"
        for i in range(3):
            (outside / "deep").mkdir(parents=True, exist_ok=True)
            (outside / "deep" / f"p{i}.md").write_text(f"# P{i}\n\nnarwhal {i}\n")
        os.rename(outside, workspace.docs / "project")
        await shows(h, "narwhal", [f"project/deep/p{i}.md" for i in range(3)])
        os.rename(workspace.docs / "project", tmp_path / "elsewhere" / "back")
        await shows(h, "narwhal", [])
        assert await source_ids(h, "egrets") == ["note.md"]


async def test_files_in_new_and_remade_folders_are_watched(workspace) -> None:
    """Each folder is watched on its own: a folder tree made while serving (``mkdir -p``), a file
    written into its deepest folder later, and a folder deleted and made again under the same name
    are all followed."""
    workspace.write("top.md", "# Top\n\nstarling\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "starling", ["top.md"])
        deep = workspace.docs / "a" / "b" / "c"
        deep.mkdir(parents=True)
        (deep / "first.md").write_text("# First\n\nkestrel one\n")
        await shows(h, "kestrel", ["a/b/c/first.md"])
        (deep / "second.md").write_text("# Second\n\nkestrel two\n")  # only a watch on c sees this
        await shows(h, "kestrel", ["a/b/c/first.md", "a/b/c/second.md"])
        shutil.rmtree(workspace.docs / "a")
        await shows(h, "kestrel", [])
        (workspace.docs / "a").mkdir()
        (workspace.docs / "a" / "again.md").write_text("# Again\n\nkestrel three\n")
        await shows(h, "kestrel", ["a/again.md"])
        (workspace.docs / "a" / "later.md").write_text("# Later\n\nkestrel four\n")
        await shows(h, "kestrel", ["a/again.md", "a/later.md"])
        assert (await status(h)).watch == "watched"


async def test_excluded_and_gitignored_files_never_enter(workspace) -> None:
    workspace.write_config('exclude_globs = ["private/**"]\n')
    workspace.write(".gitignore", "scratch/\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await wait_for(lambda: _passes(h), "sync on start")
        workspace.write("scratch/a.md", "ocelot scratch\n")
        workspace.write("private/b.md", "ocelot private\n")
        workspace.write("node_modules/c.md", "ocelot module\n")
        workspace.write("notes.py", "ocelot = 'code'\n")
        workspace.write("sentinel.md", "ocelot sentinel\n")
        await shows(h, "ocelot", ["sentinel.md"])
        await anyio.sleep(0.5)  # anything later would have come with or after the sentinel's batch
        assert await source_ids(h, "ocelot") == ["sentinel.md"]
        workspace.write(".gitignore", "")  # a changed .gitignore re-syncs the source
        await shows(h, "ocelot", ["scratch/a.md", "sentinel.md"])


async def _passes(h: Harness) -> int:
    return (await status(h)).sync_passes


async def test_a_burst_of_changes_is_applied_in_few_passes(workspace) -> None:
    for i in range(300):
        workspace.write(f"branch/f{i:03}.md", f"# F{i}\n\nbefore {i}\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "f150", ["branch/f150.md"])
        before = await _passes(h)
        for i in range(300):  # a branch switch: every file rewritten at once
            (workspace.docs / "branch" / f"f{i:03}.md").write_text(f"# F{i}\n\nafter quetzal {i}\n")

        async def all_changed() -> bool:
            hits = (await h.search(SearchRequest(query="quetzal", mode="keyword", limit=100))).results
            return len(hits) == 100 and len(await _bodies_with(h, "quetzal")) == 300
        await wait_for(all_changed, "the burst is applied")
        assert await _passes(h) - before <= 2


async def _bodies_with(h: Harness, word: str) -> list[str]:
    assert h.store is not None
    rows = h.store.connection().execute("SELECT id FROM documents WHERE body LIKE ?", (f"%{word}%",))
    return [r[0] for r in rows]


async def test_a_vanished_root_is_polled_then_watched_again(workspace) -> None:
    workspace.write("a.md", "# A\n\ncapybara\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "capybara", ["a.md"])
        shutil.rmtree(workspace.docs)

        async def polled() -> SourceOut | None:
            state = await status(h)
            return state if state.watch == "polled" else None
        state = await wait_for(polled, "the source is reported polled")
        assert "does not exist" in (state.watch_note or "")
        assert await source_ids(h, "capybara") == ["a.md"]  # an unmounted root does not wipe the index
        workspace.docs.mkdir()
        workspace.write("b.md", "# B\n\ncapybara again\n")

        async def watched() -> bool:
            return (await status(h)).watch == "watched"
        await wait_for(watched, "watched again")
        await shows(h, "capybara", ["b.md"])  # the catch-up sync saw a.md gone and b.md new
        workspace.write("c.md", "# C\n\ncapybara three\n")
        await shows(h, "capybara", ["b.md", "c.md"])


def _watch_limit(paths: list[str]) -> Any:
    raise OSError(errno.ENOSPC, "OS file watch limit reached")


async def test_when_the_watch_limit_is_reached_the_source_is_polled(workspace) -> None:
    workspace.write_config('sync_interval = "1s"\n')
    async with Harness.open(workspace.config()) as h, anyio.create_task_group() as tg:
        live = LiveIndex(h, tg, notify=_watch_limit)
        live.start()
        state = await wait_for(lambda: _polled(h), "polled")
        assert "limit" in (state.watch_note or "") and "max_user_watches" in (state.watch_note or "")
        workspace.write("late.md", "# Late\n\naxolotl\n")
        await shows(h, "axolotl", ["late.md"])
        live.stop()
        tg.cancel_scope.cancel()


async def _polled(h: Harness) -> SourceOut | None:
    state = await status(h)
    return state if state.watch == "polled" else None


async def test_listeners_hear_which_documents_changed(workspace) -> None:
    workspace.write("a.md", "# A\n\nkiwi\n")
    workspace.write("b.md", "# B\n\nkiwi\n")
    heard: list[DocumentChanges] = []
    doc = {name: document_id("filesystem:docs", name) for name in ("a.md", "b.md", "c.md")}
    async with Harness.open(workspace.config()) as h:
        unsubscribe = h.subscribe_documents(heard.append)
        await h.sync()
        assert heard[-1] == DocumentChanges(added={doc["a.md"], doc["b.md"]})
        await h.sync()  # nothing changed: nothing to hear
        assert len(heard) == 1
        async with h.serving():
            workspace.write("a.md", "# A\n\nkiwi edited\n")
            (workspace.docs / "b.md").unlink()
            workspace.write("c.md", "# C\n\nkiwi\n")

            async def all_heard() -> bool:
                merged = DocumentChanges()
                for changes in heard[1:]:
                    merged.merge(changes)
                return merged == DocumentChanges(added={doc["c.md"]}, updated={doc["a.md"]}, deleted={doc["b.md"]})
            await wait_for(all_heard, "the live changes are heard")
        unsubscribe()
        workspace.write("c.md", "# C\n\nkiwi again\n")
        count = len(heard)
        await h.sync()
        assert len(heard) == count


async def test_sources_reports_a_failed_sync_and_a_running_one(workspace) -> None:
    workspace.write("a.md", "# A\n\nlynx\n")
    async with Harness.open(workspace.config()) as h:
        assert (await status(h)).watch is None  # not serving: nothing to say
        await h.sync()
        state = await status(h)
        assert (state.last_outcome, state.syncing, state.sync_passes) == ("ok", False, 1)
        shutil.rmtree(workspace.docs)
        with pytest.raises(NotConfigured, match="does not exist"):
            await h.sync()
        state = await status(h)
        assert state.last_outcome == "error" and "does not exist" in (state.last_error or "")
        assert state.sync_passes == 1


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


async def test_git_sources_sync_on_their_interval(workspace, tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    repo.mkdir()
    (repo / "guide.md").write_text("# Guide\n\nthe first gizmo\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    workspace.write_config(f'\n[connectors.git.up]\nurl = "{repo}"\nsync_interval = "1s"\n')
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "gizmo", ["guide.md"])
        (repo / "more.md").write_text("# More\n\nanother gizmo\n")
        git("add", ".", cwd=repo)
        git("commit", "-qm", "two", cwd=repo)
        await shows(h, "gizmo", ["guide.md", "more.md"])
        listing = {s.name: s for s in (await h.sources()).sources}
        assert listing["git:up"].watch == "interval" and listing["filesystem:docs"].watch == "watched"


@pytest.mark.slow
async def test_embeddings_follow_a_live_update(workspace) -> None:
    text = workspace.config_path.read_text().replace('provider = "disabled"', 'provider = "local"')
    workspace.config_path.write_text(text)
    workspace.write("money.md", "# Finance\n\nQuarterly revenue grew thanks to strong enterprise sales.\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        async def embedded() -> bool:
            return (await status(h)).embedded_chunks == 1
        await wait_for(embedded, "the sync on start is embedded", 60)
        workspace.write("cats.md", "# Pets\n\nKittens love to sleep in warm sunny spots near the window.\n")

        async def found() -> bool:
            hits = (await h.search(SearchRequest(query="young cats napping", mode="semantic"))).results
            return bool(hits) and hits[0].source_id == "cats.md"
        await wait_for(found, "semantic search finds the new note", 30)
        state = await status(h)
        assert state.pending_chunks == 0 and state.embedded_chunks == 2


async def test_a_changed_connector_config_resyncs_that_source(workspace) -> None:
    workspace.write("keep.md", "# Keep\n\njerboa kept\n")
    workspace.write("drafts/d.md", "# Draft\n\njerboa draft\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "jerboa", ["drafts/d.md", "keep.md"])
        workspace.write_config('exclude_globs = ["drafts/"]\n')
        await shows(h, "jerboa", ["keep.md"])
        workspace.write("drafts/e.md", "# Draft 2\n\njerboa again\n")  # still watched, by the new rules
        workspace.write("more.md", "# More\n\njerboa more\n")
        await shows(h, "jerboa", ["keep.md", "more.md"])


async def test_a_failing_embedder_is_logged_once_and_leaves_chunks_pending(workspace, tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    text = workspace.config_path.read_text().replace(
        'provider = "disabled"', f'provider = "local"\nmodel_path = "{broken.as_posix()}"')
    workspace.config_path.write_text(text)
    workspace.write("a.md", "# A\n\ndingo\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "dingo", ["a.md"])  # keyword search does not wait for the embedder
        workspace.write("b.md", "# B\n\ndingo two\n")
        await shows(h, "dingo", ["a.md", "b.md"])

        async def tried_twice() -> bool:
            return len([r for r in caplog.records if "embedding new chunks failed" in r.getMessage()]) >= 1 \
                and (await status(h)).sync_passes >= 2
        await wait_for(tried_twice, "the embedder was tried")
        assert await h.embed_new() is None  # fails again: not logged again
        failures = [r for r in caplog.records if "embedding new chunks failed" in r.getMessage()]
        assert len(failures) == 1 and failures[0].levelname == "WARNING"
        assert (await status(h)).pending_chunks == 2
