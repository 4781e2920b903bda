"""The git connector against real repositories made with the real `git`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from context_harness.core.harness import Harness
from context_harness.errors import NotConfigured
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "upstream"
    (path / "docs").mkdir(parents=True)
    (path / "docs" / "guide.md").write_text("# Guide\n\nHow to configure the flux capacitor.\n")
    (path / "docs" / "old.md").write_text("# Old\n\nDeprecated gizmo notes.\n")
    (path / "README.md").write_text("# Readme\n\nTop-level capacitor overview.\n")
    git("init", "-q", "-b", "main", cwd=path)
    git("add", ".", cwd=path)
    git("commit", "-qm", "first", cwd=path)
    return path


async def test_clone_then_fetch_propagates_changes(workspace, repo: Path) -> None:
    workspace.write_config(f'[connectors.git.upstream]\nurl = "{repo}"\nroot = "docs"\nbranch = "main"\n')
    async with Harness.open(workspace.config()) as h:
        first = await h.sync("git")
        assert first.total("added") == 2
        hit = (await h.search(SearchRequest(query="capacitor", filters={"source": "git"}))).results
        assert [r.source_id for r in hit] == ["guide.md"]  # README.md is outside root
        (repo / "docs" / "guide.md").write_text("# Guide\n\nHow to tune the warp drive.\n")
        (repo / "docs" / "old.md").unlink()
        git("add", "-A", cwd=repo)
        git("commit", "-qm", "second", cwd=repo)
        second = await h.sync("git:upstream")
        assert second.total("updated") == 1 and second.total("deleted") == 1
        assert [r.title for r in (await h.search(SearchRequest(query="warp drive"))).results] == ["Guide"]
        assert (await h.search(SearchRequest(query="gizmo"))).results == []
        third = await h.sync("git")
        assert third.total("unchanged") == 1


async def test_unreachable_repository_is_a_clear_error(workspace, tmp_path: Path) -> None:
    workspace.write_config(f'[connectors.git.missing]\nurl = "{tmp_path / "nope"}"\n')
    async with Harness.open(workspace.config()) as h:
        with pytest.raises(NotConfigured, match="git clone"):
            await h.sync()


def test_web_urls_for_hosted_repositories() -> None:
    from context_harness.connectors.git import _web_base

    assert _web_base("https://github.com/acme/docs.git", "main") == "https://github.com/acme/docs/blob/main/"
    assert _web_base("https://gitlab.com/acme/docs", "dev") == "https://gitlab.com/acme/docs/-/blob/dev/"
    assert _web_base("git@github.com:acme/docs.git", "main") is None
