"""The live index beside what real folders hold (issue 27): a FIFO, a socket, names that are not
UTF-8, an unreadable folder, a watcher that dies, a sync that fails. A serving Harness with its real
watcher keeps every source live, finds a note saved beside them within a second, and ``sources``
says how each source really is (``status``: ok, degraded, failing)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.core.live import RESTARTS, LiveIndex, rust_notify
from context_harness.errors import NotConfigured
from context_harness.models import SearchRequest, SourceOut
from support.waiting import LIMIT, source_ids, wait_for

pytestmark = pytest.mark.anyio
SAVED_LIMIT = 1.0  # seconds a note saved beside hostile entries may take to be searchable


async def shows(h: Harness, query: str, expected: list[str], limit: float = LIMIT) -> None:
    async def check() -> bool:
        return await source_ids(h, query) == expected
    await wait_for(check, f"search {query!r} gives {expected}", limit)


async def status(h: Harness) -> SourceOut:
    return (await h.sources()).sources[0]


def raw_path(folder: Path, name: bytes) -> bytes:
    return os.path.join(os.fsencode(folder), name)


async def saved_and_found(h: Harness, folder: Path, name: str, word: str, expected: str | None = None) -> float:
    """Save a note ``name`` holding ``word``; the seconds until a search finds it (fails past the limit)."""
    started = time.monotonic()
    (folder / name).write_text(f"# {word}\n\n{word} sighting\n")
    await shows(h, word, [expected or name], limit=SAVED_LIMIT)
    return time.monotonic() - started


@contextmanager
def a_socket(path: Path) -> Iterator[None]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    try:
        yield
    finally:
        sock.close()


async def test_a_name_that_is_not_utf8_never_stops_the_watch(workspace) -> None:
    """watchfiles raises on an event naming a path that is not UTF-8; that used to stop every watcher of
    the live index (a shared stop flag) while ``sources`` said watched."""
    workspace.write("a.md", "# A\n\nheron\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "heron", ["a.md"])
        with open(raw_path(workspace.docs, b"caf\xe9.md"), "wb") as f:
            f.write(b"# Cafe\n\nespresso\n")
        await shows(h, "espresso", ["caf\\xe9.md"], limit=SAVED_LIMIT + 1)  # the watcher restarts, re-syncs
        for i in range(3):
            await saved_and_found(h, workspace.docs, f"later{i}.md", f"ibis{i}")
        state = await status(h)
        assert (state.watch, state.status, state.last_outcome) == ("watched", "ok", "ok"), state


async def test_reading_a_file_named_in_latin1_never_stops_the_watch(workspace, caplog: pytest.LogCaptureFixture) -> None:
    """Any event naming such a file, a mere read of it too, stops an OS watcher for good: its folder
    is polled instead, and a note saved there or elsewhere is still found within a second."""
    workspace.write("a.md", "# A\n\nheron\n")
    workspace.write("sub/b.md", "# B\n\ncurlew\n")
    odd = raw_path(workspace.docs, b"caf\xe9.md")
    with open(odd, "wb") as f:
        f.write(b"# Cafe\n\nespresso\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "espresso", ["caf\\xe9.md"])
        for i in range(3):
            with open(odd, "rb") as f:
                f.read()
            os.listdir(workspace.docs)
            await saved_and_found(h, workspace.docs, f"top{i}.md", f"stint{i}")
            await saved_and_found(h, workspace.docs / "sub", f"low{i}.md", f"knot{i}", expected=f"sub/low{i}.md")
        (workspace.docs / "made").mkdir()  # a folder made in the polled one is watched too
        await saved_and_found(h, workspace.docs / "made", "in.md", "turnstone", expected="made/in.md")
        await saved_and_found(h, workspace.docs / "made", "in2.md", "phalarope", expected="made/in2.md")
        assert not [r for r in caplog.records if "watcher stopped" in r.getMessage()]
        with open(odd, "wb") as f:  # a real change of it is seen too (it stops the polling watcher once)
            f.write(b"# Cafe\n\nristretto\n")
        await shows(h, "ristretto", ["caf\\xe9.md"], limit=SAVED_LIMIT)
        await saved_and_found(h, workspace.docs, "last.md", "sanderling")
        state = await status(h)
        assert (state.watch, state.status) == ("watched", "ok"), state


async def test_a_folder_named_in_latin1_is_polled_and_said_so(workspace) -> None:
    workspace.write("a.md", "# A\n\nheron\n")
    odd = raw_path(workspace.docs, b"alt\xe9")
    os.mkdir(odd)
    with open(os.path.join(odd, b"inside.md"), "wb") as f:
        f.write(b"# Inside\n\nkestrel\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "kestrel", ["alt\\xe9/inside.md"])
        await saved_and_found(h, workspace.docs, "top.md", "plover")
        state = await status(h)
        assert state.watch == "watched" and "not UTF-8" in (state.watch_note or "") and "alt\\xe9" in state.watch_note
        assert state.status == "degraded" and "polled" in (state.status_reason or "")
        text = (await h.call_tool("sources", {})).text  # the MCP tool's text block says it too
        assert "filesystem:docs: 3 documents, 3 chunks, degraded (partly polled: 1 folder(s)" in text
        # said once; the polled folder's own sync may be running as the tool answers ("; syncing now")
        assert text.count("not UTF-8") == 1 and text.removesuffix("; syncing now").endswith("; watched")


async def test_a_note_beside_a_fifo_a_socket_odd_names_and_a_locked_folder_is_found_within_a_second(
        workspace) -> None:
    workspace.write("a.md", "# A\n\nheron\n")
    os.mkfifo(workspace.docs / "pipe.md")
    locked = workspace.docs / "locked"
    locked.mkdir()
    (locked / "secret.md").write_text("# Secret\n\nhidden\n")
    locked.chmod(0)
    with open(raw_path(workspace.docs, b"\xff\xfe.md"), "wb") as f:
        f.write(b"# Odd\n\nnot utf8 name\n")
    try:  # a twin of /dev/zero named like a note, where this process may make device nodes
        os.mknod(workspace.docs / "zero.md", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pass
    try:
        with a_socket(workspace.docs / "sock.md"):
            async with Harness.open(workspace.config()) as h, h.serving():
                await shows(h, "heron", ["a.md"])
                await saved_and_found(h, workspace.docs, "saved.md", "avocet")
                os.mkfifo(workspace.docs / "second-pipe.md")  # made while serving
                await saved_and_found(h, workspace.docs, "saved2.md", "godwit")
                # the sync the second fifo's event started may still be running: the source settles
                state = await wait_for(partial(_settled, h), "the source watched and not syncing")
                assert state.watch == "watched", state
                assert state.status in ("ok", "degraded") and state.healthy, state
    finally:
        locked.chmod(0o755)


async def _settled(h: Harness) -> SourceOut | None:
    state = await status(h)
    return state if not state.syncing else None


async def test_a_watcher_that_keeps_dying_is_polled_and_said_so(workspace) -> None:
    workspace.write("a.md", "# A\n\nheron\n")
    workspace.write_config('sync_interval = "1s"\n')
    async with Harness.open(workspace.config()) as h, anyio.create_task_group() as tg:
        live = LiveIndex(h, tg, notify=_dying)
        live.start()
        state = await wait_for(lambda: _polled(h), f"polled after the watcher died {RESTARTS} times")
        assert f"stopped {RESTARTS} times" in (state.watch_note or "") and "RuntimeError" in state.watch_note
        assert state.status == "degraded" and "polled" in (state.status_reason or "")
        workspace.write("late.md", "# Late\n\naxolotl\n")
        await shows(h, "axolotl", ["late.md"])
        live.stop()
        tg.cancel_scope.cancel()


class _DyingWatcher:
    """A real watcher whose next ``watch`` raises as watchfiles does on a path it cannot decode."""

    def __init__(self, paths: list[str]) -> None:
        self.real = rust_notify(paths)

    def watch(self, *args: Any) -> Any:
        raise RuntimeError('Unable to decode path "/x/caf\\xE9.md" to string')

    def close(self) -> None:
        self.real.close()


def _dying(paths: list[str]) -> Any:
    return _DyingWatcher(paths)


async def _polled(h: Harness) -> SourceOut | None:
    state = await status(h)
    return state if state.watch == "polled" else None


async def test_status_is_failing_when_the_last_sync_failed_and_degraded_when_a_live_update_did(workspace) -> None:
    workspace.write("a.md", "# A\n\nlynx\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        state = await status(h)
        assert (state.status, state.status_reason, state.healthy) == ("ok", None, True)
        connector = h.connectors[0]
        real_scan_paths = connector.scan_paths  # type: ignore[attr-defined]

        def broken(*args: Any) -> Any:
            raise OSError("disk went away")
        connector.scan_paths = broken  # type: ignore[attr-defined]
        with pytest.raises(OSError):
            await h.sync_paths(connector.label, ["a.md"])
        state = await status(h)
        assert state.status == "degraded" and "live update failed" in (state.status_reason or "")
        assert state.healthy and not state.syncing and state.last_outcome == "error"
        connector.scan_paths = real_scan_paths  # type: ignore[attr-defined]
        workspace.write("b.md", "# B\n\nmarten\n")
        await h.sync_paths(connector.label, ["b.md"])  # the next save is indexed: nothing stayed wedged
        assert await source_ids(h, "marten") == ["b.md"]
        assert (await status(h)).status == "ok"
        shutil.rmtree(workspace.docs)
        with pytest.raises(NotConfigured, match="does not exist"):
            await h.sync(embed=False)
        state = await status(h)
        assert (state.status, state.healthy, state.syncing) == ("failing", False, False)
        assert "does not exist" in (state.status_reason or "")


async def test_status_is_degraded_when_the_last_sync_skipped_items_for_errors(workspace) -> None:
    from context_harness.connectors.base import ERROR_SKIP_REASONS

    workspace.write("a.md", "# A\n\nlynx\n")
    reason = sorted(ERROR_SKIP_REASONS)[0]
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert (await status(h)).status == "ok"
        assert h.store is not None  # as the last sync records what it skipped (ingest.sync.skip_notes)
        h.store.record_sync("filesystem:docs", f"skipped: {reason} 2 (x.md, y.md), too_large 1 (big.md)")
    async with Harness.open(workspace.config()) as h:  # a process that did not sync it: the stored notes
        state = await status(h)
        assert state.status == "degraded" and f"{reason} 2" in (state.status_reason or "") and state.healthy
        assert "too_large" not in (state.status_reason or "")


async def test_a_search_during_the_first_sync_says_indexing_is_running_and_how_far(workspace) -> None:
    for i in range(3):
        workspace.write(f"n{i}.md", f"# N{i}\n\nharrier {i}\n")
    reached, go_on = threading.Event(), threading.Event()

    def progress(event: dict[str, Any]) -> None:  # hold the first sync once every item is read
        if event["event"] == "progress":
            reached.set()
            go_on.wait(LIMIT)

    async with Harness.open(workspace.config()) as h, anyio.create_task_group() as tg:
        tg.start_soon(partial(h.sync, embed=False, progress=progress))
        await anyio.to_thread.run_sync(reached.wait, LIMIT)
        response = await h.search(SearchRequest(query="harrier", mode="keyword"))
        assert response.indexing is not None and response.notice is not None
        assert (response.indexing.sources, response.indexing.phase) == (["filesystem:docs"], "indexing")
        assert (response.indexing.done, response.indexing.total) == (3, 3)
        assert "indexing is still running" in response.notice and "3 of 3 items" in response.notice
        payload = response.model_dump(mode="json")
        assert set(payload) == {"results", "notice", "indexing"}
        text = (await h.call_tool("search", {"query": "harrier", "mode": "keyword"})).text
        assert text.startswith("Note: indexing is still running")  # the MCP tool's text block says it too
        go_on.set()
    after = await _search_payload(workspace)
    assert set(after) == {"results"} and len(after["results"]) == 3  # the REST shape: only `results` again


async def _search_payload(workspace: Any) -> dict[str, Any]:
    async with Harness.open(workspace.config()) as h:
        return (await h.search(SearchRequest(query="harrier", mode="keyword"))).model_dump(mode="json")


async def test_a_sync_that_skipped_items_for_errors_leaves_the_source_degraded(workspace) -> None:
    scripts = workspace.root / "scripts"
    scripts.mkdir()
    (scripts / "items.lua").write_text('connector = {name = "items"}\nfunction connector.scan(config)\n'
                                       '    return json.parse(fs.read("items.json"))\nend\n')
    items = [{"source_id": "a", "title": "Alpha", "body": "aardvark"}, {"title": "no id", "body": "x"}]
    (scripts / "items.json").write_text(json.dumps(items))
    workspace.write_config('[connectors.script.items]\npath = "scripts/items.lua"\n')
    async with Harness.open(workspace.config()) as h:
        await h.sync("script:items", embed=False)
        items_source = {s.name: s for s in (await h.sources()).sources}["script:items"]
        assert items_source.status == "degraded" and items_source.healthy
        assert "invalid_item 1" in (items_source.status_reason or "")
        (scripts / "items.json").write_text(json.dumps(items[:1]))
        await h.sync("script:items", embed=False)
        items_source = {s.name: s for s in (await h.sources()).sources}["script:items"]
        assert (items_source.status, items_source.status_reason) == ("ok", None)


async def test_a_saved_name_that_merely_looks_escaped_is_indexed_under_its_escaped_id(workspace) -> None:
    """The watcher's paths become source ids by ``escape_name``, as a full scan's do."""
    workspace.write("a.md", "# A\n\nheron\n")
    async with Harness.open(workspace.config()) as h, h.serving():
        await shows(h, "heron", ["a.md"])
        await saved_and_found(h, workspace.docs, "caf\\xe9.md", "dunlin", expected="caf\\x5cxe9.md")
        assert (await h.sync(embed=False)).total("unchanged") == 2  # a full scan agrees: same ids
