"""What the workspaces of one server share (issue 52): one embedding model per model name (the real
bundled model, loaded once though each workspace has its own embedder and vectors) and one pool of
worker threads; and how results of several workspaces merge (``core/routing.merge``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.core.routing import merge
from context_harness.core.workspaces import WorkspaceSet, shared_threads
from context_harness.embedding import local
from support.workspace import config_toml, write_files

pytestmark = pytest.mark.anyio


def registry(tmp_path: Path, embedding: str) -> Path:
    lines = []
    for name, text in (("one", "Tomatoes need sun."), ("two", "The pager rotates weekly.")):
        write_files(tmp_path / name / "docs", {"a.md": f"# {name}\n\n{text}\n"})
        path = tmp_path / name / "ctx.toml"
        path.write_text(config_toml(docs_root=str(tmp_path / name / "docs"), embedding=embedding), encoding="utf-8")
        lines.append(f'[workspaces.{name}]\nconfig = "{path}"\n')
    file = tmp_path / "workspaces.toml"
    file.write_text("".join(lines), encoding="utf-8")
    return file


async def test_one_model_and_one_thread_pool_serve_every_workspace(tmp_path: Path, model_cache: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_CACHE_DIR", str(model_cache))
    before = set(local._MODELS)  # other tests of this process may have loaded it, with other thread counts
    async with WorkspaceSet.open(registry(tmp_path, "local")) as served:
        one, two = (w.harness for w in served.served)
        for harness in (one, two):
            await harness.sync()
        found = await served.call_tool("search", {"query": "when does the pager rotate", "mode": "semantic"})
        assert {hit["workspace"] for hit in found.payload["results"]} == {"one", "two"}
        embedders = [h.semantic().embedder for h in (one, two)]
        assert embedders[0] is not embedders[1]  # each workspace its own embedder and vectors ...
        assert embedders[0].load() is embedders[1].load()  # ... over the one model the process loaded
        loaded = [key for key in local._MODELS if key[1] == embedders[0].spec.identity_model]
        assert len(set(loaded) - before) <= 1 and len(loaded) >= 1  # at most one load for the two workspaces
        assert one._limiter is two._limiter and one._limiter.total_tokens == shared_threads(2)


def test_results_merge_by_score_each_labelled_with_its_workspace() -> None:
    a = [{"id": "a1", "score": 0.9}, {"id": "a2", "score": 0.2}]
    b = [{"id": "b1", "score": 0.5}, {"id": "b2", "score": 0.4}]
    assert [(r["id"], r["workspace"]) for r in merge([("a", a), ("b", b)], 3)] == [
        ("a1", "a"), ("b1", "b"), ("b2", "b")]
    assert [r["id"] for r in merge([("a", a), ("b", b)], 4, "interleaved")] == ["a1", "b1", "a2", "b2"]
    assert [r["id"] for r in merge([("a", a), ("b", b)], 4, "normalised")] == ["a1", "b1", "b2", "a2"]
