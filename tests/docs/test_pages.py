"""The pages a new user follows run as written: every command block of the README, the tutorial and the
how-to guides runs in a scratch HOME (``ctx`` is this checkout's) and prints what the page shows, or is
marked ``<!-- not-run: REASON -->``. The conventions are in ``runner.py`` and CONTRIBUTING.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docs.runner import Block, PageError, Session, matches, parse
from support.paths import BIN, REPO

HERE = Path(__file__).parent
PAGES = ["README.md", "docs/tutorial.md", *sorted(p.relative_to(REPO).as_posix()
                                                  for p in (REPO / "docs" / "how-to").glob("*.md"))]
# Where a page starts: "home" (an empty HOME), "notes" (~/notes holds the two notes the tutorial
# writes, tests/docs/notes/) or "workspace" (those notes after `ctx init`). The session starts in
# ~/notes when it exists.
START = {"README.md": "notes", "docs/tutorial.md": "home", "docs/how-to/use-the-cli.md": "notes"}


def page_blocks(page: str) -> list[Block]:
    return parse(page, (REPO / page).read_text(encoding="utf-8"))


def runs_something(page: str) -> bool:
    return any((b.is_command and b.not_run is None) or b.append_to for b in page_blocks(page))


RUNNABLE = [page for page in PAGES if runs_something(page)]  # the rest have nothing to run (counted below)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every page: the embedding model's quantised copy is built once (about 2 s a page)."""
    return tmp_path_factory.mktemp("docs-cache")


def session(tmp_path: Path, start: str, cache: Path | None = None) -> Session:
    home = tmp_path / "home"
    home.mkdir()
    cwd = home
    if start in {"notes", "workspace"}:
        cwd = home / "notes"
        shutil.copytree(HERE / "notes", cwd)
    shell = Session(home=home, bin_dir=BIN, cwd=cwd, checkout=REPO, cache=cache)
    if start == "workspace":
        shell.shell("ctx init > /dev/null", "the page's workspace (ctx init)")
    return shell


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_page_runs_as_written(page: str, tmp_path: Path, cache: Path) -> None:
    shell = session(tmp_path, START.get(page, "workspace"), cache)
    for block in page_blocks(page):
        shell.run(block)


def test_every_command_block_runs_or_says_why() -> None:
    """The pages parse under the conventions, and the count of blocks run stays what the docs say
    (a page that loses its blocks to not-run markers shows up here)."""
    run, marked = [], []
    for page in PAGES:
        for block in page_blocks(page):
            if block.is_command:
                (marked if block.not_run else run).append(block.where)
    assert len(run) >= 22, run
    assert all(where.split(":")[0] in PAGES for where in marked)


def test_the_runner_fails_a_page_that_drifted(tmp_path: Path) -> None:
    """The mechanism itself: output that differs from the page, a failing command, a marker without a
    reason or away from a block, each fail; loose matching takes times, scores, ids and elisions."""
    page = ("```bash\nmkdir -p sub && cd sub && export WORD=lighthouse\n```\n\n"
            "```bash\necho \"$WORD in $(basename \"$PWD\") took 0.17s\"\n```\n\n```\nlighthouse in sub took 9.99s\n```\n")
    shell = Session(home=tmp_path / "a", bin_dir=BIN, cwd=tmp_path)
    (tmp_path / "a").mkdir()
    for block in parse("ok.md", page):
        shell.run(block)
    assert shell.ran == 2  # the session carried the folder and the variable from the first block

    drifted = page.replace("lighthouse in sub", "lighthouse in elsewhere")
    (tmp_path / "b").mkdir()
    shell = Session(home=tmp_path / "b", bin_dir=BIN, cwd=tmp_path)
    with pytest.raises(AssertionError, match="the output differs from the page's"):
        for block in parse("drifted.md", drifted):
            shell.run(block)
    with pytest.raises(AssertionError, match="exited with 3"):
        shell.run(parse("fails.md", "```sh\nexit 3\n```\n")[0])
    assert parse("skip.md", "<!-- not-run: needs a client GUI -->\n```sh\nexit 3\n```\n")[0].not_run == "needs a client GUI"
    with pytest.raises(PageError, match="needs a value"):
        parse("bare.md", "<!-- not-run: -->\n```sh\nexit 3\n```\n")
    with pytest.raises(PageError, match="not right before a fenced block"):
        parse("away.md", "<!-- not-run: GUI -->\nSome prose.\n\n```sh\nexit 3\n```\n")

    assert matches("1. Release  score 0.367\n   id 89ae8b20b04ea11a4672a8f0 · chunk 0\n   # Release …\n",
                   "1. Release score 0.512\n   id 0123456789abcdef01234567 · chunk 0\n   # Release checklist Before")
    assert not matches("filesystem:docs: 2 added", "filesystem:docs: 3 added")
    assert matches("pinned at 1a2b3c4; added", "pinned at 9f8e7d6; added")
    assert not matches("pinned at 1a2b3c4; added", "pinned at 1a2b3c4; faded")
    assert matches("first\n...\nlast\n", "first\nsecond\nthird\nlast\n")
    slow = Session(home=tmp_path / "c", bin_dir=BIN, cwd=tmp_path)  # a slow machine prints progress lines
    assert slow.shown("sync\nfilesystem:docs: still working, 5 s so far\nfilesystem:docs: 1/2 (50%), 0.3/s, about 3 s "
                      "left\nembed chunks: done in 6.1 s\nok\n") == "sync\nok\n"
    assert not matches("first\nlast\n", "first\nsecond\nlast\n")
