"""The `ctx` command line as a user runs it: a real subprocess, real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import GetRequest, SearchRequest
from support.workspace import long_markdown, marker, write_long_document


def ctx(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=60)


def test_init_is_idempotent_and_never_overwrites(tmp_path: Path) -> None:
    first = ctx("init", "--dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    cfg = tmp_path / ".ctx" / "config.toml"
    assert cfg.is_file() and (tmp_path / ".ctx" / "data").is_dir()
    assert "data/" in (tmp_path / ".ctx" / ".gitignore").read_text()
    config_mod.load_file(cfg)  # the generated config is valid
    cfg.write_text(cfg.read_text() + "\n# my edit\n")
    second = ctx("init", "--dir", str(tmp_path))
    assert second.returncode == 0 and "nothing changed" in second.stdout
    assert cfg.read_text().endswith("# my edit\n")


def test_sync_search_get_sources_stats_json(sample_docs) -> None:
    cfg = str(sample_docs.config_path)
    synced = ctx("sync", "--config", cfg, "--json")
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["sources"][0]["added"] == 3
    found = ctx("search", "sandbox memory", "--config", cfg, "--json")
    payload = json.loads(found.stdout)

    async def direct() -> dict:
        async with Harness.open(config_mod.load_file(sample_docs.config_path)) as h:
            return (await h.search(SearchRequest(query="sandbox memory"))).model_dump(mode="json")

    assert payload == anyio.run(direct)  # --json is exactly the Harness payload MCP and REST render
    doc_id = payload["results"][0]["id"]
    got = json.loads(ctx("get", doc_id, "--config", cfg, "--json").stdout)
    assert got["id"] == doc_id and got["title"] == "Lua Sandbox"
    sources = json.loads(ctx("sources", "--config", cfg, "--json").stdout)
    assert sources["sources"][0]["name"] == "filesystem:docs"
    stats = json.loads(ctx("stats", "--config", cfg, "--json").stdout)
    assert stats["documents"] == 3
    human = ctx("search", "sandbox", "--config", cfg, "--explain")
    assert "Lua Sandbox" in human.stdout and "keyword score" in human.stdout and "{" not in human.stdout


def test_filters_on_the_command_line(sample_docs) -> None:
    cfg = str(sample_docs.config_path)
    ctx("sync", "--config", cfg)
    tagged = json.loads(ctx("search", "memory engines", "--tag", "security", "--config", cfg, "--json").stdout)
    assert [r["title"] for r in tagged["results"]] == ["Lua Sandbox"]
    dated = json.loads(ctx("search", "sandbox", "--until", "2020-01-01", "--config", cfg, "--json").stdout)
    assert dated["results"] == []


def test_user_errors_exit_1_with_one_line(sample_docs, tmp_path: Path) -> None:
    cfg = str(sample_docs.config_path)
    cases = [
        ("get", "nope", "--config", cfg),
        ("search", "x", "--limit", "0", "--config", cfg),
        ("search", "x", "--since", "soon", "--config", cfg),
        ("sync", "git:missing", "--config", cfg),
        ("search", "x", "--config", str(tmp_path / "missing.toml")),
    ]
    for args in cases:
        result = ctx(*args, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_under_json_user_errors_are_one_json_line_on_stderr(sample_docs, tmp_path: Path) -> None:
    cfg = str(sample_docs.config_path)
    cases = [
        (("get", "nope", "--config", cfg, "--json"), "not_found"),
        (("search", "x", "--limit", "0", "--config", cfg, "--json"), "bad_request"),
        (("sync", "git:missing", "--json", "--config", cfg), "bad_request"),
        (("search", "x", "--json", "--config", str(tmp_path / "missing.toml")), "config_error"),
        (("--root", str(tmp_path / "absent"), "stats", "--json"), "config_error"),
    ]
    for args, code in cases:
        result = ctx(*args, cwd=tmp_path)
        assert result.returncode == 1 and result.stdout == "", (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, result.stderr)
        error = json.loads(lines[0])["error"]
        assert error["code"] == code and error["message"], (args, error)


def test_search_on_a_never_synced_root_says_so_and_how_to_sync(tmp_path: Path, sample_docs) -> None:
    home = {"XDG_DATA_HOME": str(tmp_path / "data")}
    plain = ctx_env(home, "--root", str(sample_docs.docs), "search", "sandbox")
    assert plain.returncode == 0, plain.stderr
    assert "never synced" in plain.stdout and "ctx sync" in plain.stdout and "no results" in plain.stdout
    payload = json.loads(ctx_env(home, "--root", str(sample_docs.docs), "search", "sandbox", "--json").stdout)
    assert payload["results"] == [] and "never synced" in payload["notice"]
    assert ctx_env(home, "--root", str(sample_docs.docs), "sync").returncode == 0
    synced = json.loads(ctx_env(home, "--root", str(sample_docs.docs), "search", "sandbox", "--json").stdout)
    assert synced["results"] and "notice" not in synced


def test_stats_and_explain_are_readable_text_without_json(sample_docs) -> None:
    cfg = str(sample_docs.config_path)
    assert ctx("sync", "--config", cfg, "--no-embed").returncode == 0
    stats = ctx("stats", "--config", cfg)
    assert stats.returncode == 0, stats.stderr
    assert "documents: 3" in stats.stdout and "last sync: " in stats.stdout and "embeddings: " in stats.stdout
    for python_repr in ("None", "False", "True", "{", "'"):
        assert python_repr not in stats.stdout, stats.stdout
    explained = ctx("search", "sandbox", "--explain", "--mode", "keyword", "--config", cfg)
    assert "explain: keyword score " in explained.stdout and "(rank 1)" in explained.stdout
    assert "{" not in explained.stdout and "'" not in explained.stdout, explained.stdout
    as_json = json.loads(ctx("search", "sandbox", "--explain", "--mode", "keyword", "--config", cfg, "--json").stdout)
    assert as_json["results"][0]["explain"]["keyword_rank"] == 1


def ctx_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_get_window_options(tmp_path: Path) -> None:
    cfg = write_long_document(tmp_path)
    assert ctx("sync", "--config", str(cfg)).returncode == 0
    hit = json.loads(ctx("search", marker(20), "--limit", "1", "--config", str(cfg), "--json").stdout)["results"][0]

    def get(*options: str) -> dict:
        result = ctx("get", hit["id"], *options, "--config", str(cfg), "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    async def direct(request: GetRequest) -> dict:
        async with Harness.open(config_mod.load_file(cfg)) as h:
            return (await h.get(request)).model_dump(mode="json")

    section = get("--chunk", str(hit["chunk"]))
    assert section == anyio.run(direct, GetRequest(id=hit["id"], chunk=hit["chunk"]))  # the payload MCP and REST give
    assert marker(20) in section["body"] and section["truncated"]
    page = get("--offset", "5000", "--max-chars", "2000")
    assert page["range"]["start"] == 5000 and page["body"] == long_markdown()[5000:page["range"]["end"]]
    assert get("--max-chars", "0")["body"] == long_markdown()
    human = ctx("get", hit["id"], "--config", str(cfg))
    assert human.stdout.startswith("# File system manual") and len(human.stdout) < 21_000
    assert f"next: ctx get {hit['id']} --offset " in human.stderr
    bad = ctx("get", hit["id"], "--chunk", "1", "--offset", "2", "--config", str(cfg))
    assert bad.returncode == 1 and bad.stderr.strip() == "error: arguments: give either 'chunk' or 'offset', not both"


def test_bad_config_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "ctx.toml"
    bad.write_text('[connectors.filesystem.d]\nroot = "d"\nbogus = 1\n')
    result = ctx("sources", "--config", str(bad))
    assert result.returncode == 1 and "connectors.filesystem.d.bogus" in result.stderr
    assert "Traceback" not in result.stderr


def test_usage_errors_exit_2(sample_docs) -> None:
    assert ctx("search").returncode == 2
    assert ctx("search", "x", "--mode", "fuzzy").returncode == 2
    assert ctx("frobnicate").returncode == 2


def test_progress_json_lines_on_stderr(sample_docs) -> None:
    result = ctx("sync", "--config", str(sample_docs.config_path), "--progress", "json")
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert [e["event"] for e in events][:2] == ["scan", "start"] and events[-1]["event"] == "done"
    assert events[-1]["added"] == 3
    quiet = ctx("sync", "--config", str(sample_docs.config_path))  # not a terminal: no progress noise
    assert quiet.stderr == "" and "3 unchanged" in quiet.stdout


def test_root_option_indexes_without_config(tmp_path: Path, sample_docs) -> None:
    env_home = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    import os

    result = subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", "sync",
                             "--root", str(sample_docs.docs), "--json"], capture_output=True, text=True,
                            env={**os.environ, **env_home}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["sources"][0]["added"] == 3
    assert (tmp_path / "xdg" / "context-harness" / "roots").is_dir()


def assert_answers_how_to_connect(results: list[dict]) -> None:
    """The demo's question ("how do I connect Claude Desktop") is answered from the docs site (docs/): its
    best hit is a page that tells how, the first three quote Claude Desktop, and the how-to or the tutorial is
    among them; the first shows a readable passage (prose, not the lines of a shell transcript)."""
    assert results[0]["source_id"] in {"how-to/connect-a-client.md", "tutorial.md", "index.md"}, results[0]
    first = results[0]["snippet"]
    assert "```" not in first and not re.search(r"/home/|\.json\b|^\$ |ctx \w+ claude-desktop", first), first
    assert re.search(r"[A-Z][^.]{20,}\.", first), first  # a sentence
    assert any("Claude Desktop" in r["snippet"] for r in results[:3]), results[:3]
    assert {"how-to/connect-a-client.md", "tutorial.md"} & {r["source_id"] for r in results[:3]}


def test_demo_indexes_the_bundled_sample_and_says_how_far_it_is(tmp_path: Path) -> None:
    """The first demo embeds ~1,060 chunks (19-60 s on a 2-core machine): not on a terminal, it says so
    on stderr at once, then how far the embedding is every few seconds; stdout is the result alone."""
    import os
    import time

    started = time.monotonic()
    demo = subprocess.Popen([sys.executable, "-m", "context_harness", "demo", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_DATA_HOME": str(tmp_path)})
    assert demo.stderr is not None
    first = demo.stderr.readline()
    first_after = time.monotonic() - started
    out, rest = demo.communicate(timeout=300)  # 5x headroom over the slowest run seen
    assert demo.returncode == 0, first + rest
    assert first.startswith("indexing the sample knowledge base into ") and first_after < 25  # 5x of 5 s
    said = rest.splitlines()
    assert any(line.startswith("embed chunks: ") and line.endswith(" to do") for line in said), said
    assert said[-1].startswith("embed chunks: done in "), said
    assert_answers_how_to_connect(json.loads(out)["results"])


def test_demo_embeds_again_a_demo_workspace_embedded_by_another_model(tmp_path: Path) -> None:
    """The demo's workspace is the product's own: vectors from an earlier version's embedder are
    replaced, not reported as a mismatch (found by the Quickstart on a machine that ran an older demo)."""
    import os
    import sqlite3

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "context_harness", "demo", "--json"]
    assert subprocess.run(command, capture_output=True, text=True, env=env, timeout=300).returncode == 0
    with sqlite3.connect(tmp_path / "context-harness" / "demo" / "ctx.sqlite") as conn:
        conn.execute("UPDATE embedding_meta SET value = 'all-MiniLM-L6-v2-int8' WHERE key = 'model'")
        conn.execute("UPDATE embedding_meta SET value = 'local:all-MiniLM-L6-v2-int8:384' WHERE key = 'identity'")
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert_answers_how_to_connect(json.loads(again.stdout)["results"])


def test_sync_whose_embedding_fails_still_reports_the_sync(sample_docs, tmp_path: Path) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    text = sample_docs.config_path.read_text().replace(
        'provider = "disabled"', f'provider = "local"\nmodel_path = "{empty.as_posix()}"')
    sample_docs.config_path.write_text(text)
    cfg = str(sample_docs.config_path)
    synced = ctx("sync", "--config", cfg)
    assert synced.returncode == 1
    assert "3 added" in synced.stdout  # the summary of what was synced
    error = synced.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ") and "keyword search works meanwhile" in error
    as_json = ctx("sync", "--config", cfg, "--json")
    assert as_json.returncode == 1
    payload = json.loads(as_json.stdout)
    assert payload["sources"][0]["unchanged"] == 3 and payload["embedding_error"]["code"] == "embeddings_unavailable"
    found = ctx("search", "sandbox", "--mode", "keyword", "--config", cfg, "--json")
    assert json.loads(found.stdout)["results"][0]["title"] == "Lua Sandbox"
