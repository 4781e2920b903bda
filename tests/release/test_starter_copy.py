"""An installed wheel's starter registry (context_harness/starter_registry, not a git repository) becomes a
git repository in the user's data folder, since registries are pinned to commits: the package's files,
committed once, and committed again only when an upgrade changed them. check.py runs `ctx registry init`
against a real wheel."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from context_harness.registries.service import CHECKOUT_STARTER, _git_copy


def commits(folder: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%H %s"], cwd=folder, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_the_packaged_registry_is_committed_once_and_again_after_a_change(tmp_path: Path) -> None:
    packaged = tmp_path / "site-packages" / "starter_registry"
    shutil.copytree(CHECKOUT_STARTER, packaged)
    (packaged / "__pycache__").mkdir()
    (packaged / "__pycache__" / "x.pyc").write_bytes(b"\0")
    copy = tmp_path / "data" / "starter-registry"

    assert _git_copy(packaged, copy) == copy
    first = commits(copy)
    assert len(first) == 1 and "The starter registry of context-harness" in first[0]
    tracked = subprocess.run(["git", "ls-files"], cwd=copy, capture_output=True, text=True, check=True).stdout.split()
    assert "registry.toml" in tracked and "connectors/rss/connector.lua" in tracked
    assert not any("__pycache__" in path for path in tracked)

    _git_copy(packaged, copy)
    assert commits(copy) == first  # unchanged: no new commit, the pin stays valid

    (packaged / "connectors" / "rss" / "connector.lua").write_text("-- upgraded\n", encoding="utf-8")
    (packaged / "tools" / "web-fetch" / "tool.lua").unlink()
    _git_copy(packaged, copy)
    assert len(commits(copy)) == 2
    assert (copy / "connectors" / "rss" / "connector.lua").read_text(encoding="utf-8") == "-- upgraded\n"
    assert not (copy / "tools" / "web-fetch" / "tool.lua").exists()  # what the upgrade dropped is gone


def test_an_upgrade_reaches_a_workspace_through_registry_update(tmp_path: Path, monkeypatch) -> None:
    """As installed from a wheel (no checkout registry/ beside the package): `ctx registry init` adds the
    data folder's copy; after an upgrade changed the packaged registry, `ctx registry update` offers it."""
    from context_harness.config import load_file
    from context_harness.registries import service

    packaged = tmp_path / "site-packages" / "context_harness" / "starter_registry"
    shutil.copytree(CHECKOUT_STARTER, packaged)
    monkeypatch.setattr(service, "CHECKOUT_STARTER", tmp_path / "no-checkout" / "registry")
    monkeypatch.setattr(service, "PACKAGED_STARTER", packaged)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config_path = tmp_path / "ws" / "ctx.toml"
    config_path.parent.mkdir()
    config_path.write_text('[db]\npath = "data/ctx.sqlite"\n', encoding="utf-8")

    added = service.init(load_file(config_path))
    assert added["url"] == (tmp_path / "data" / "context-harness" / "starter-registry").as_posix()
    assert service.update(load_file(config_path), None, False)[0]["changed"] == []

    (packaged / "connectors" / "rss" / "connector.lua").write_text("-- upgraded\n", encoding="utf-8")
    plan = service.update(load_file(config_path), None, False)[0]
    assert plan["changed"] == ["connectors/rss/connector.lua"] and plan["to"] != plan["from"]
