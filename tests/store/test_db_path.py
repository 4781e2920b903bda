"""A ``[db] path`` that is not ours: a user's own file, another program's SQLite database, a folder.
Each is one clear error naming the path and the fix (choose another ``[db] path``), and nothing,
``ctx check --repair`` included, renames, writes or "repairs" what is there."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import StorageFault
from support.cli import run_ctx
from support.workspace import Workspace

pytestmark = pytest.mark.anyio

USER_TEXT = b"my precious notes, not a database\n" * 40


def point_db_at(workspace: Workspace, target: Path) -> None:
    text = workspace.config_path.read_text(encoding="utf-8")
    workspace.config_path.write_text(text.replace('"data/ctx.sqlite"', f'"{target.as_posix()}"'), encoding="utf-8")


def foreign_sqlite(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT)")
    conn.execute("INSERT INTO moz_places(url) VALUES('https://example.test/')")
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["text", "foreign_sqlite"])
async def test_a_file_that_never_was_our_database_is_refused_and_left_untouched(sample_docs: Workspace,
                                                                               kind: str) -> None:
    user_file = sample_docs.root / "mine.db"
    if kind == "text":
        user_file.write_bytes(USER_TEXT)
        before = USER_TEXT
    else:
        before = foreign_sqlite(user_file)
    point_db_at(sample_docs, user_file)
    with pytest.raises(StorageFault) as caught:
        async with Harness.open(config_mod.load_file(sample_docs.config_path)):
            pass
    assert caught.value.kind == "not_a_database"
    assert str(user_file) in caught.value.message and "not a context-harness database" in caught.value.message
    assert "choose another [db] path" in caught.value.message and "--repair" not in caught.value.message

    for args in (["sync"], ["check"], ["check", "--repair"]):
        done = run_ctx(*args, "--config", str(sample_docs.config_path), cwd=sample_docs.root)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "not a context-harness database" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert user_file.read_bytes() == before, "the user's file was changed"
    assert sorted(p.name for p in sample_docs.root.iterdir()) == ["ctx.toml", "docs", "mine.db"], \
        "nothing was moved aside or written beside it"


async def test_an_empty_file_becomes_a_new_database(sample_docs: Workspace) -> None:
    empty = sample_docs.root / "data" / "ctx.sqlite"
    empty.parent.mkdir()
    empty.touch()
    async with Harness.open(config_mod.load_file(sample_docs.config_path)) as harness:
        summary = await harness.sync()
    assert summary.sources[0].added == 3
    assert empty.read_bytes().startswith(b"SQLite format 3\x00")


async def test_a_folder_as_db_path_is_named_a_folder_not_unwritable(sample_docs: Workspace) -> None:
    folder = sample_docs.root / "data" / "ctx.sqlite"
    folder.mkdir(parents=True)
    with pytest.raises(StorageFault) as caught:
        async with Harness.open(config_mod.load_file(sample_docs.config_path)):
            pass
    assert caught.value.kind == "db_path_folder"
    assert "is a folder" in caught.value.message and "not writable" not in caught.value.message
    assert "set [db] path to a file name" in caught.value.message
    done = run_ctx("sync", "--config", str(sample_docs.config_path), cwd=sample_docs.root)
    assert done.returncode == 1 and "is a folder" in done.stderr and "not writable" not in done.stderr, done.stderr
    assert folder.is_dir() and not any(folder.iterdir())
