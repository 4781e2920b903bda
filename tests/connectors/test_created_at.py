"""``created_at``: files get their birth time where the platform has one, else their first sync (kept
on later syncs); front matter wins; git files (full clones) get the oldest commit that added them and
the newest that changed them, from one ``git log`` pass."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from context_harness.common import timestamps
from context_harness.connectors.git import file_dates
from context_harness.core.harness import Harness

pytestmark = pytest.mark.anyio

JAN_2020 = "2020-01-01T10:00:00+00:00"
JUN_2021 = "2021-06-01T10:00:00+00:00"
MAR_2022 = "2022-03-01T10:00:00+00:00"


def git(*args: str, cwd: Path, when: str | None = None) -> None:
    env = {**os.environ, **({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {})}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True, env=env)


async def documents(harness: Harness) -> dict[str, Any]:
    """source_id -> the document (``get``), for every document."""
    listing = await harness.document_listing(None, 100)
    docs = [await harness.get(d.id) for d in listing.documents]
    return {d.source_id: d for d in docs}


def instant(text: str | None) -> dt.datetime:
    value = timestamps.from_iso(text) if isinstance(text, str) else text
    assert isinstance(value, dt.datetime)
    return value


async def test_files_created_at_is_birth_time_or_first_sync_and_stays(workspace) -> None:
    workspace.write("plain.md", "# Plain\n\nfirst version\n")
    workspace.write("dated.md", "---\ncreated: 2019-05-04\n---\n# Dated\n\ntext\n")
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        first = await documents(harness)
        created = instant(first["plain.md"].created_at)
        born = getattr(os.stat(workspace.docs / "plain.md"), "st_birthtime", None)
        if born is None:  # Linux: no birth time from Python's stat; the first sync stands for it
            assert before <= created <= dt.datetime.now(dt.UTC)
        else:
            assert abs(created.timestamp() - born) < 1
        assert instant(first["dated.md"].created_at).date() == dt.date(2019, 5, 4)

        path = workspace.write("plain.md", "# Plain\n\nsecond version, longer\n")
        os.utime(path, (created.timestamp() + 3600, created.timestamp() + 3600))
        report = await harness.sync()
        assert report.sources[0].updated == 1
        second = await documents(harness)
        assert second["plain.md"].created_at == first["plain.md"].created_at  # kept
        assert second["plain.md"].updated_at != first["plain.md"].updated_at


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """a.md added in 2020 and changed in 2021; b.md added in 2020 and renamed to d.md in 2022; c.md
    added in 2022 with front matter dates."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    (repo / "a.md").write_text("# A\n\nfirst\n")
    (repo / "b.md").write_text("# B\n\nbee\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo, when=JAN_2020)
    git("commit", "-qm", "one", cwd=repo, when=JAN_2020)
    (repo / "a.md").write_text("# A\n\nsecond\n")
    git("commit", "-qam", "two", cwd=repo, when=JUN_2021)
    git("mv", "b.md", "d.md", cwd=repo)
    (repo / "c.md").write_text("---\nupdated: 2023-01-01\n---\n# C\n\nsee\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "three", cwd=repo, when=MAR_2022)
    return repo


def test_one_git_log_pass_dates_every_file(history: Path) -> None:
    dates = file_dates(history)
    assert dates["a.md"] == (instant(JAN_2020), instant(JUN_2021))
    assert dates["d.md"] == (instant(MAR_2022), instant(MAR_2022))
    assert dates["c.md"] == (instant(MAR_2022), instant(MAR_2022))
    assert dates["b.md"] == (instant(JAN_2020), instant(JAN_2020))  # gone from HEAD; never asked for
    assert file_dates(history / "nowhere") == {}


async def test_git_files_created_and_updated_from_history(workspace, history: Path) -> None:
    workspace.write_config(f'[connectors.git.up]\nurl = "{history}"\nbranch = "main"\nshallow = false\n')
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        docs = await documents(harness)
    assert set(docs) >= {"a.md", "c.md", "d.md"}
    assert (instant(docs["a.md"].created_at), instant(docs["a.md"].updated_at)) == (instant(JAN_2020),
                                                                                       instant(JUN_2021))
    assert instant(docs["d.md"].created_at) == instant(MAR_2022)
    assert instant(docs["c.md"].created_at) == instant(MAR_2022)
    assert instant(docs["c.md"].updated_at).date() == dt.date(2023, 1, 1)  # front matter wins


async def test_shallow_git_files_get_their_first_sync(workspace, history: Path) -> None:
    workspace.write_config(f'[connectors.git.up]\nurl = "file://{history}"\nbranch = "main"\n')
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2)
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        docs = await documents(harness)
    assert before <= instant(docs["a.md"].created_at) <= dt.datetime.now(dt.UTC)
