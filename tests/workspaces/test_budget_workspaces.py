"""``max_tokens`` on a search across workspaces (one server, several workspaces): the merged answer,
not each workspace's, fits the budget, and ``omitted`` counts what every workspace left out."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from context_harness.common.text import estimate_tokens, payload_tokens
from context_harness.core.workspaces import WorkspaceSet
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.anyio
WORDS = "pager rotation weekly schedule alert incident handover shift".split()


def registry(tmp_path: Path) -> Path:
    rng = random.Random(2)
    lines = []
    for name in ("one", "two", "three"):
        notes = {f"n{i}.md": f"# {name} note {i}\n\n" + " ".join(
            " ".join(rng.choice(WORDS) for _ in range(9)).capitalize() + "." for _ in range(6)) + "\n"
            for i in range(6)}
        write_files(tmp_path / name / "docs", notes)
        path = tmp_path / name / "ctx.toml"
        path.write_text(config_toml(docs_root=str(tmp_path / name / "docs")), encoding="utf-8")
        lines.append(f'[workspaces.{name}]\nconfig = "{path}"\n')
    file = tmp_path / "workspaces.toml"
    file.write_text("".join(lines), encoding="utf-8")
    return file


async def test_the_merged_answer_fits_the_budget(tmp_path: Path) -> None:
    async with WorkspaceSet.open(registry(tmp_path)) as served:
        for workspace in served.served:
            await workspace.harness.sync()
        full = await served.call_tool("search", {"query": "pager rotation schedule"})
        fitted = await served.call_tool("search", {"query": "pager rotation schedule", "max_tokens": 600})
        refused = served.call_tool("search", {"query": "pager", "max_tokens": 5})
        with pytest.raises(Exception, match="max_tokens"):
            await refused
    assert len({hit["workspace"] for hit in full.payload["results"]}) == 3
    assert payload_tokens(full.payload) > 1200
    assert payload_tokens(fitted.payload) <= 600 and estimate_tokens(fitted.text) <= 600
    kept = fitted.payload["results"]
    assert kept and [(r["workspace"], r["id"]) for r in kept] == [
        (r["workspace"], r["id"]) for r in full.payload["results"][:len(kept)]]
    assert fitted.payload["omitted"]["results"] == len(full.payload["results"]) - len(kept)
