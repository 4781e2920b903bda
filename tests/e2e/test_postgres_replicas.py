"""Two ``ctx serve --http`` replicas on one PostgreSQL: replica A watches the folder and syncs; a
document written there is found through replica B (which never writes) within a second or two of
the write: the watcher's pause, A's commit, then B's very next search."""

from __future__ import annotations

import time
from pathlib import Path

import httpx2
import pytest

from support.http import free_port, spawn_http, stop_process

pytestmark = pytest.mark.slow

CONFIG = """\
[db]
path = "data-{name}/ctx.sqlite"
backend = "postgres"
url = "${{CTX_DATABASE_URL}}"

[embedding]
provider = "disabled"

[server]
sync_on_start = {writes}
watch = {writes}

[connectors.filesystem.docs]
root = "docs"
"""


def found(base: str, query: str) -> list[str]:
    response = httpx2.post(f"{base}/tools/search", json={"query": query, "mode": "keyword"}, timeout=10)
    assert response.status_code == 200, response.text
    return [r["source_id"] for r in response.json()["results"]]


def test_a_document_synced_through_one_replica_is_found_through_another(
        tmp_path: Path, child_env: dict[str, str], pg_url: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "first.md").write_text("# First\n\nAn albatross glides.\n")
    configs = {}
    for name, writes in (("a", "true"), ("b", "false")):
        configs[name] = tmp_path / f"{name}.toml"
        configs[name].write_text(CONFIG.format(name=name, writes=writes))
    env = {**child_env, "CTX_DATABASE_URL": pg_url}
    ports = {name: free_port() for name in configs}
    procs = [spawn_http(["--config", str(configs[name])], env, ports[name]) for name in configs]
    try:
        a, b = (f"http://127.0.0.1:{ports[name]}" for name in ("a", "b"))
        deadline = time.monotonic() + 30
        while found(b, "albatross") != ["first.md"]:  # A's sync on start, seen through B
            assert time.monotonic() < deadline, "replica A's first sync never showed through replica B"
            time.sleep(0.1)
        time.sleep(0.5)  # the watcher is running
        (tmp_path / "docs" / "second.md").write_text("# Second\n\nA cormorant dives.\n")
        written = time.monotonic()
        while found(b, "cormorant") != ["second.md"]:
            assert time.monotonic() - written < 5, "the document written under replica A never showed through B"
            time.sleep(0.02)
        seen = time.monotonic() - written
        assert found(a, "cormorant") == ["second.md"]
        print(f"found through replica B {seen:.2f} s after the write")
        assert seen < 2.5, f"found through replica B {seen:.2f} s after the write"
        sources = httpx2.get(f"{b}/tools/sources", timeout=10).json()["sources"]
        assert [(s["name"], s["document_count"]) for s in sources] == [("filesystem:docs", 2)]
    finally:
        for proc in procs:
            stop_process(proc)
