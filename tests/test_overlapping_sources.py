"""Sources whose folders overlap (issue 50): the newcomer who added the write-back how-to's old block
to the tutorial's config had the same folder indexed twice, every result twice, and nothing said so.
Now ``ctx sync``, ``ctx sources``, ``ctx doctor`` and the console name both sources and the fix, and a
search lists each file once: the deeper folder's copy, of one folder the source declared first.

Real Harness, real syncs of real folders, ``ctx`` and the server in subprocesses, a real git clone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
import uvicorn
from docs.runner import parse

from context_harness import config as config_mod
from context_harness.config import Config
from context_harness.core.harness import Harness
from context_harness.core.workspace import init_workspace
from context_harness.embedding import fake
from context_harness.models import SearchRequest, SearchResponse
from context_harness.server.http import build_app
from support.cli import run_ctx
from support.http import free_port
from support.workspace import write_files

NOTES = Path(__file__).parent / "docs" / "notes"  # the two notes the tutorial writes
# The write-back how-to's block as it was: a second source over the tutorial's folder.
OLD_BLOCK = '''
[connectors.filesystem.notes]
root = "{root}"
writable = true
write_globs = ["inbox/**", "archive/**"]    # optional; empty: anywhere under root
front_matter = false                         # true: title and tags as YAML front matter
'''


@pytest.fixture(autouse=True)
def fake_provider() -> None:
    fake.register()


def newcomer(tmp_path: Path, embedding: str = "") -> Path:
    """~/notes with the tutorial's notes, `ctx init` there, and the old write-back block appended."""
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    config = init_workspace(notes).config
    with config.open("a", encoding="utf-8") as out:
        out.write(OLD_BLOCK.format(root=notes) + embedding)
    return config


def files(response: SearchResponse, config: Config) -> list[str]:
    """Each result as the file it is (its source's folder joined with its path)."""
    roots = {f"filesystem:{name}": entry.root for name, entry in config.connectors.filesystem.items()}
    return [os.path.realpath(roots[r.source] / r.source_id) for r in response.results]


async def searched(h: Harness, query: str, **options: object) -> SearchResponse:
    return await h.search(SearchRequest.model_validate({"query": query, **options}))


def test_the_how_to_now_opens_the_source_you_have(tmp_path: Path) -> None:
    """The write-back how-to's block, added to the config `ctx init` wrote, makes the tutorial's
    source writable and declares no second one."""
    page = Path(__file__).parents[1] / "docs" / "how-to" / "write-back.md"
    [block] = [b for b in parse("write-back.md", page.read_text(encoding="utf-8")) if b.append_to]
    config_path = init_workspace(tmp_path).config
    with config_path.open("a", encoding="utf-8") as out:
        out.write(block.text)
    config = config_mod.load_file(config_path)
    assert list(config.connectors.filesystem) == ["docs"] and config.connectors.filesystem["docs"].writable


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
async def test_the_tutorial_plus_the_old_block_lists_each_note_once(tmp_path: Path, mode: str) -> None:
    config = config_mod.load_file(newcomer(tmp_path, '\n[embedding]\nprovider = "fake"\n'))
    async with Harness.open(config) as h:
        report = await h.sync()
        assert sorted((s.source, s.added) for s in report.sources) == [("filesystem:docs", 2),
                                                                        ("filesystem:notes", 2)]
        found = await searched(h, "release wheel", mode=mode, limit=10)
        assert len(found.results) == 2, found.results
        assert len(set(files(found, config))) == 2
        assert {r.source for r in found.results} == {"filesystem:docs"}  # one folder: the first declared wins
        only = await searched(h, "release wheel", mode=mode, filters={"source": "filesystem:notes"})
        assert {r.source for r in only.results} == {"filesystem:notes"}  # asked for by name: still there


@pytest.mark.anyio
async def test_sync_and_sources_name_both_sources_and_the_fix(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    config = config_mod.load_file(newcomer(tmp_path, '\n[embedding]\nprovider = "disabled"\n'))
    async with Harness.open(config) as h:
        report = await h.sync()
        listing = await h.sources()
    said = (f"filesystem:notes overlaps filesystem:docs: both index {notes}, so every file there is indexed "
            "twice (search lists each once, from filesystem:docs); keep one source per folder: remove "
            "[connectors.filesystem.notes] and put the keys you need from it (such as writable = true) in "
            "[connectors.filesystem.docs]")
    for overlaps in (report.overlaps, listing.overlaps):
        assert [(o.sources, o.folder, o.message) for o in overlaps] == [
            (["filesystem:docs", "filesystem:notes"], str(notes), said)]


@pytest.mark.anyio
async def test_a_folder_inside_another_the_deeper_source_wins_and_excluding_it_ends_the_warning(
        tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# Alpha\n\nlighthouse keeper", "inbox/b.md": "# Beta\n\nlighthouse lamp",
                     "inbox/deep/c.md": "# Gamma\n\nlighthouse stairs"})
    base = f'[db]\npath = "{tmp_path}/data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
    inner = f'[connectors.filesystem.inbox]\nroot = "{kb}/inbox"\n'
    outer = f'[connectors.filesystem.all]\nroot = "{kb}"\n'
    path = tmp_path / "ctx.toml"
    path.write_text(base + inner + outer, encoding="utf-8")  # the inner declared first: depth decides, not order
    config = config_mod.load_file(path)
    async with Harness.open(config) as h:
        report = await h.sync()
        found = await searched(h, "lighthouse", mode="keyword", limit=3)
        assert sorted((r.source, r.source_id) for r in found.results) == [
            ("filesystem:all", "a.md"), ("filesystem:inbox", "b.md"), ("filesystem:inbox", "deep/c.md")]
        listed = (await h.sources()).overlaps
    assert [o.message for o in report.overlaps] == [o.message for o in listed] == [
        f"filesystem:inbox overlaps filesystem:all: its folder {kb}/inbox is inside filesystem:all's {kb}, so "
        "every file there is indexed twice (search lists each once, from filesystem:inbox); add \"inbox/**\" to "
        "exclude_globs in [connectors.filesystem.all], or remove one of the two"]
    for fixed in ('exclude_globs = ["inbox/**"]\n', 'exclude_globs = ["inbox/"]\n'):
        path.write_text(base + inner + outer + fixed, encoding="utf-8")
        async with Harness.open(config_mod.load_file(path)) as h:
            assert (await h.sync()).overlaps == [] and (await h.sources()).overlaps == []
    (kb / ".gitignore").write_text("inbox/\n", encoding="utf-8")  # a .gitignore on the way leaves it out too
    path.write_text(base + inner + outer, encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as h:
        assert (await h.sources()).overlaps == []


@pytest.mark.anyio
async def test_a_symlinked_root_is_the_folder_it_names_and_a_skipped_folder_is_no_overlap(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# Alpha\n\nlighthouse", "node_modules/pkg/readme.md": "# Pkg\n\nlighthouse"})
    (tmp_path / "link").symlink_to(kb)
    path = tmp_path / "ctx.toml"
    path.write_text(f'[db]\npath = "{tmp_path}/data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                    f'[connectors.filesystem.one]\nroot = "{kb}"\n[connectors.filesystem.two]\nroot = "{tmp_path}/link"\n'
                    f'[connectors.filesystem.pkg]\nroot = "{kb}/node_modules/pkg"\n', encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as h:
        await h.sync()
        assert [o.sources for o in (await h.sources()).overlaps] == [["filesystem:one", "filesystem:two"]]
        found = await searched(h, "lighthouse", mode="keyword")
        assert sorted((r.source, r.source_id) for r in found.results) == [
            ("filesystem:one", "a.md"), ("filesystem:pkg", "readme.md")]


@pytest.mark.anyio
async def test_the_list_stays_full_when_every_file_has_a_copy(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {f"n{i:02}.md": f"# Note {i}\n\nharbour {'tide ' * i}" for i in range(30)})
    path = tmp_path / "ctx.toml"
    path.write_text(f'[db]\npath = "{tmp_path}/data/ctx.sqlite"\n[embedding]\nprovider = "fake"\n'
                    + "".join(f'[connectors.filesystem.s{n}]\nroot = "{kb}"\n' for n in range(3)), encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as h:
        await h.sync()
        for mode in ("keyword", "semantic", "hybrid"):
            found = await searched(h, "harbour tide", mode=mode, limit=20)
            assert len(found.results) == 20 and len({r.source_id for r in found.results}) == 20, mode
            assert {r.source for r in found.results} == {"filesystem:s0"}, mode


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.mark.anyio
async def test_a_folder_source_over_a_git_sources_checkout(tmp_path: Path) -> None:
    """The workspace's data folder inside the indexed folder: the git source's checkout is read twice."""
    repo = tmp_path / "repo"
    write_files(repo, {"guide.md": "# Guide\n\nlighthouse"})
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "one", cwd=repo)
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# Alpha\n\nlighthouse"})
    path = kb / "ctx.toml"
    path.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                    f'[connectors.filesystem.kb]\nroot = "."\n[connectors.git.guide]\nurl = "{repo}"\n', encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as h:
        assert [c.checkout for c in h.connectors if c.label == "git:guide"] == [kb / "data" / "git" / "guide"]
        await h.sync("git:guide")
        report = await h.sync()
        assert [o.sources for o in report.overlaps] == [["git:guide", "filesystem:kb"]]
        assert '"data/git/guide/**" to exclude_globs in [connectors.filesystem.kb]' in report.overlaps[0].message
        found = await searched(h, "lighthouse", mode="keyword")
        assert sorted((r.source, r.source_id) for r in found.results) == [("filesystem:kb", "a.md"),
                                                                            ("git:guide", "guide.md")]


def test_ctx_sync_and_sources_warn_at_the_terminal(tmp_path: Path) -> None:
    """The newcomer's own commands, in the folder, on the tutorial's config as written."""
    notes = tmp_path / "notes"
    newcomer(tmp_path)
    synced = run_ctx("sync", "--no-embed", cwd=notes, timeout=120)
    assert synced.returncode == 0, synced.stderr
    warning = (f"warning: filesystem:notes overlaps filesystem:docs: both index {notes}, so every file there is "
               "indexed twice")
    assert [line for line in synced.stderr.splitlines() if line.startswith("warning:")][0].startswith(warning)
    listed = run_ctx("sources", cwd=notes)
    assert any(line.startswith(warning) for line in listed.stdout.splitlines()), listed.stdout
    as_json = json.loads(run_ctx("sources", "--json", cwd=notes).stdout)
    assert [o["sources"] for o in as_json["overlaps"]] == [["filesystem:docs", "filesystem:notes"]]
    found = run_ctx("search", "release", "--mode", "keyword", cwd=notes)
    assert found.stdout.count("release.md") == 1, found.stdout


def test_ctx_doctor_warns_from_what_the_server_lists(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    config = newcomer(tmp_path, '\n[embedding]\nprovider = "disabled"\n')
    assert run_ctx("sync", cwd=notes, timeout=120).returncode == 0
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("CTX_CONFIG", None)
    done = subprocess.run([sys.executable, "-m", "context_harness", "doctor", "--config", str(config)], cwd=notes,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"  warning: filesystem:notes overlaps filesystem:docs: both index {notes}, so every file there is "
            "indexed twice") in done.stdout, done.stdout


@asynccontextmanager
async def console(h: Harness) -> AsyncIterator[httpx2.AsyncClient]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(h), host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as ui:
            yield ui
        server.should_exit = True


@pytest.mark.anyio
async def test_the_console_sources_page_names_the_overlap(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    config = config_mod.load_file(newcomer(tmp_path, '\n[embedding]\nprovider = "disabled"\n'))
    async with Harness.open(config) as h:
        await h.sync()
        async with console(h) as ui:
            page = (await ui.get("/ui/sources")).text
    assert '<h2 id="overlaps-title">Sources that overlap</h2>' in page
    assert (f'<li data-sources="filesystem:docs filesystem:notes">filesystem:notes overlaps filesystem:docs: both '
            f"index {notes}, so every file there is indexed twice") in page


def test_a_root_swapped_while_it_is_resolved_is_taken_as_written(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.11's realpath raises FileNotFoundError when a link changes between its steps (a sync
    beside a folder being swapped hit it); the overlap check then takes the folder as written."""
    from context_harness.config.roots import source_roots

    (tmp_path / "docs").mkdir()
    config = config_mod.from_dict({"db": {"path": str(tmp_path / "data" / "ctx.sqlite")},
                                   "connectors": {"filesystem": {"docs": {"root": str(tmp_path / "docs")}}}}, None)

    def swapped(path: object, *args: object, **kwargs: object) -> str:
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(os.path, "realpath", swapped)
    assert [(root.label, root.path) for root in source_roots(config)] == [("filesystem:docs", str(tmp_path / "docs"))]
