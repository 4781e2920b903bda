"""The git connector over a repository holding a file whose name is not UTF-8: it is indexed under
its escaped name with its dates from the history, and the rest of the repository syncs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from support.trees import LATIN1_NAME

pytestmark = pytest.mark.anyio


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True, env={**os.environ, "GIT_AUTHOR_DATE": "2021-02-03T04:05:06Z",
                                             "GIT_COMMITTER_DATE": "2021-02-03T04:05:06Z"})


async def test_a_non_utf8_name_in_a_repository_is_indexed_with_its_history_dates(workspace, tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    repo.mkdir()
    (repo / os.fsdecode(LATIN1_NAME)).write_bytes(b"# Latin\n\nnumbat from an old disk\n")
    (repo / "ok.md").write_text("# Ok\n\nnumbat beside it\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "first", cwd=repo)
    workspace.write_config(f'[connectors.git.upstream]\nurl = "{repo}"\nbranch = "main"\nshallow = false\n')
    async with Harness.open(workspace.config()) as h:
        report = await h.sync("git")
        assert report.total("added") == 2 and report.total("skipped") == 0
        hits = (await h.search(SearchRequest(query="numbat"))).results
        docs = {d.source_id: d for d in [await h.get(r.id) for r in hits]}
        assert set(docs) == {"caf\\xe9.md", "ok.md"}
        assert docs["caf\\xe9.md"].created_at == "2021-02-03T04:05:06Z"
