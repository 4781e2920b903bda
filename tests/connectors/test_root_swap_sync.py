"""The index reads the root it holds, never a swapped one (issue 55): a folder source's root is opened
once, every sync walks from that descriptor, and a sync of a root whose path now names another folder
(a symlink to an outside folder, or a configured symlink that now leads elsewhere) fails naming what
happened and the fix: no outside text reaches the index, nothing indexed is deleted. Over
``Harness.sync``, the path syncs the live index and the note tools make, a serving harness with the
live index on, and a battery: a second process swapping the root back and forth while syncs run."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from context_harness.connectors.base import ScanReport
from context_harness.connectors.filesystem import FilesystemConnector
from context_harness.core.harness import Harness
from context_harness.errors import Conflict, HarnessError, NotConfigured
from context_harness.models import SourceOut
from support.root_swap import start_flipper
from support.waiting import source_ids, wait_for
from support.workspace import Workspace, config_toml

pytestmark = pytest.mark.anyio

CANARY = "quokkacanary"  # only in the outside folder: never to be found in the index
ROUNDS = int(os.environ.get("CTX_ROOT_SWAP_SYNC_ROUNDS", "200"))
LABEL = "filesystem:docs"


def outside_folder(tmp_path: Path, names: list[str]) -> Path:
    """A folder outside the source holding files named like the source's, each with the canary word."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in names + ["only-outside.md"]:
        (outside / name).write_text(f"# Outside\n\n{CANARY} {name}\n", encoding="utf-8")
    return outside


async def status(h: Harness) -> SourceOut:
    return next(s for s in (await h.sources()).sources if s.name == LABEL)


def swap(docs: Path, outside: Path) -> Path:
    """The root renamed away (its parent is writable) and a symlink to ``outside`` in its place."""
    held = docs.with_name("docs-real")
    docs.rename(held)
    docs.symlink_to(outside, target_is_directory=True)
    return held


def put_back(docs: Path, held: Path) -> None:
    docs.unlink()
    held.rename(docs)


@pytest.mark.parametrize("writable", [False, True])
async def test_a_sync_of_a_root_swapped_for_a_symlink_fails_and_reads_nothing(workspace: Workspace, tmp_path: Path,
                                                                              writable: bool) -> None:
    workspace.write_config("writable = true\n" if writable else "")
    workspace.write("a.md", "# A\n\nwombat\n")
    workspace.write("sub/b.md", "# B\n\nwombat too\n")
    outside = outside_folder(tmp_path, ["a.md", "new.md"])
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["a.md", "sub/b.md"]
        held = swap(workspace.docs, outside)
        for attempt in (h.sync(embed=False), h.sync(embed=False, full=True), h.sync_paths(LABEL, ["a.md", "new.md"])):
            with pytest.raises(Conflict) as caught:
                await attempt
            message = caught.value.message
            assert f"({workspace.docs})" in message and f"replaced by a symlink to {outside}" in message, message
            assert "put the folder back" in message and "restart" in message and "nothing was deleted" in message
        assert await source_ids(h, CANARY) == []
        assert await source_ids(h, "wombat") == ["a.md", "sub/b.md"]  # nothing deleted
        state = await status(h)
        assert state.status == "failing" and "replaced by a symlink" in (state.status_reason or ""), state
        assert not state.healthy

        (held / "c.md").write_text("# C\n\nwombat three\n", encoding="utf-8")
        put_back(workspace.docs, held)  # the same folder back: syncs work again, from it
        await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["a.md", "c.md", "sub/b.md"]
        assert await source_ids(h, CANARY) == []
        assert (await status(h)).status == "ok"


async def test_a_root_configured_as_a_symlink_is_held_where_it_led_at_start(workspace: Workspace,
                                                                           tmp_path: Path) -> None:
    real = tmp_path / "real-docs"
    real.mkdir()
    (real / "a.md").write_text("# A\n\nwombat\n", encoding="utf-8")
    outside = outside_folder(tmp_path, ["a.md"])
    shutil.rmtree(workspace.docs)
    workspace.docs.symlink_to(real, target_is_directory=True)
    workspace.config_path.write_text(config_toml(docs_root=workspace.docs.as_posix()), encoding="utf-8")  # as given
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["a.md"]
        workspace.docs.unlink()
        workspace.docs.symlink_to(outside, target_is_directory=True)
        with pytest.raises(Conflict, match=r"is a symlink that now leads to another folder \(.*outside\)"):
            await h.sync(embed=False)
        assert await source_ids(h, CANARY) == [] and await source_ids(h, "wombat") == ["a.md"]


async def test_a_root_deleted_and_made_again_is_indexed_anew(workspace: Workspace) -> None:
    workspace.write("a.md", "# A\n\nwombat\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        shutil.rmtree(workspace.docs)
        with pytest.raises(NotConfigured, match="does not exist"):
            await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["a.md"]
        workspace.docs.mkdir()  # a clone made again: not a swap
        workspace.write("b.md", "# B\n\nwombat\n")
        await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["b.md"]


async def test_a_root_swapped_while_another_folder_takes_its_place_is_refused(workspace: Workspace,
                                                                             tmp_path: Path) -> None:
    workspace.write("a.md", "# A\n\nwombat\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        workspace.docs.rename(tmp_path / "docs-old")  # still there, under another name
        workspace.docs.mkdir()
        workspace.write("x.md", f"# X\n\n{CANARY}\n")
        with pytest.raises(Conflict, match="replaced by another folder"):
            await h.sync(embed=False)
        assert await source_ids(h, CANARY) == [] and await source_ids(h, "wombat") == ["a.md"]


async def test_the_live_index_never_reads_a_swapped_root(workspace: Workspace, tmp_path: Path) -> None:
    workspace.write("a.md", "# A\n\nwombat\n")
    outside = outside_folder(tmp_path, ["a.md", "new.md"])
    async with Harness.open(workspace.config()) as h, h.serving():
        await wait_for(lambda: _shows(h, "wombat", ["a.md"]), "a.md indexed")
        held = swap(workspace.docs, outside)
        (held / "new.md").write_text("# New\n\nwombat saved while swapped\n", encoding="utf-8")  # watched: a path sync
        (held / "a.md").write_text("# A\n\nwombat edited\n", encoding="utf-8")
        (outside / "a.md").write_text(f"# Outside\n\n{CANARY} edited\n", encoding="utf-8")

        async def failing() -> SourceOut | None:
            state = await status(h)
            return state if "replaced by a symlink" in (state.status_reason or "") else None
        await wait_for(failing, "the source reported failing, naming the swap")
        deadline = time.monotonic() + 2.0  # the retries and the watcher of the link's folder run meanwhile
        while time.monotonic() < deadline:
            assert await source_ids(h, CANARY) == []
            assert await source_ids(h, "wombat") == ["a.md"]
        put_back(workspace.docs, held)
        await h.sync(embed=False)
        assert await source_ids(h, "wombat") == ["a.md", "new.md"] and await source_ids(h, CANARY) == []


async def _shows(h: Harness, query: str, expected: list[str]) -> bool:
    return await source_ids(h, query) == expected


# -- the root-swap battery -----------------------------------------------------------------------

NOTES = [f"x{i}.md" for i in range(8)]


def _save(folder_fd: int, name: str, text: str) -> None:
    """Write ``name`` in the source's own folder, wherever its name is at the moment (by descriptor)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=folder_fd)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@pytest.mark.slow
async def test_syncs_never_read_outside_while_the_root_is_swapped(workspace: Workspace, tmp_path: Path) -> None:
    for name in NOTES:
        workspace.write(name, f"# {name}\n\nwombat {name} round -1\n")
    outside = outside_folder(tmp_path, NOTES)
    outcomes: Counter[str] = Counter()
    started = time.monotonic()
    folder_fd = os.open(workspace.docs, os.O_RDONLY | os.O_DIRECTORY)
    try:
        async with Harness.open(workspace.config()) as h:
            await h.sync(embed=False)
            assert await source_ids(h, "wombat") == NOTES
            flipper = start_flipper(workspace.docs, outside, seed=7, pause=0.004, hold=0.002)
            try:
                for index in range(ROUNDS):
                    name = NOTES[index % len(NOTES)]
                    _save(folder_fd, name, f"# {name}\n\nwombat {name} round {index}\n")
                    sync = h.sync(embed=False) if index % 2 else h.sync_paths(LABEL, [name, "only-outside.md"])
                    try:
                        await sync
                        outcomes["ok"] += 1
                    except HarnessError as exc:
                        outcomes[exc.code] += 1
                    assert await source_ids(h, CANARY) == [], (index, outcomes)
                    assert await source_ids(h, "wombat") == NOTES, (index, outcomes)  # nothing deleted
            finally:
                (tmp_path / "docs-stop").touch()
                flips = int(flipper.communicate(timeout=60)[0].strip() or 0)
            assert not workspace.docs.is_symlink()
            await h.sync(embed=False)
            assert await source_ids(h, CANARY) == [] and await source_ids(h, "wombat") == NOTES
    finally:
        os.close(folder_fd)
    figures = {"rounds": ROUNDS, "flips": flips, "seconds": round(time.monotonic() - started, 1),
               "outcomes": dict(outcomes)}
    print("root-swap sync battery:", figures)
    assert flips > 50 and outcomes["ok"] > 0 and outcomes["conflict"] > 0, figures
    assert set(outcomes) <= {"ok", "conflict", "not_configured"}, figures


async def test_a_connector_used_after_its_knowledge_base_closed_reads_its_own_folder(workspace: Workspace,
                                                                                     tmp_path: Path) -> None:
    workspace.write_config("writable = true\n")
    workspace.write("a.md", "# A\n\nwombat\n")
    outside = outside_folder(tmp_path, ["a.md"])
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        connector = h.connectors[0]
    assert isinstance(connector, FilesystemConnector)
    decoys = [os.open(outside, os.O_RDONLY | os.O_DIRECTORY) for _ in range(4)]  # the closed root's number, reused
    try:
        report = ScanReport()
        loaded = [c.load() for c in connector.scan(report)]
        assert [(i.source_id, i.body.split()[-1]) for i in loaded if i is not None] == [("a.md", "wombat")], report
        swap(workspace.docs, outside)
        with pytest.raises(Conflict, match="replaced by a symlink"):
            list(connector.scan(ScanReport()))
    finally:
        for fd in decoys:
            os.close(fd)
