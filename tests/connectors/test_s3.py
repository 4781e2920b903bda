"""The S3 connector against a real S3-compatible server on 127.0.0.1 (moto's server mode): listing,
fingerprints (a no-op re-sync GETs nothing), edits, deletions, globs, skips, a bucket that vanishes,
credentials that never show, the missing extra, and `ctx sync` + an MCP stdio search end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from context_harness import config as config_mod
from context_harness.connectors.base import ScanReport
from context_harness.connectors.s3 import S3Connector
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError, NotConfigured
from context_harness.models import SearchRequest
from support.cli import run_ctx
from support.s3 import KEY_ID, SECRET, found, put, write_config

pytestmark = pytest.mark.anyio


async def test_sync_follows_edits_and_deletions_and_a_no_op_fetches_nothing(tmp_path, server, bucket, creds) -> None:
    put(server, bucket, {"notes/alpha.md": "---\ntitle: Alpha Notes\n---\nThe zanzibar protocol.\n",
                         "notes/beta.txt": "Beta talks about quokkas.\n", "gamma.md": "# Gamma\n\nOld words.\n"})
    async with Harness.open(config_mod.load_file(write_config(tmp_path, server, bucket))) as h:
        first = await h.sync()
        assert (first.total("added"), server.log.object_gets(bucket)) == (3, 3)
        assert await found(h, "zanzibar") == ["notes/alpha.md"]
        doc = (await h.search(SearchRequest(query="zanzibar", mode="keyword"))).results[0]
        assert (doc.title, doc.source, doc.source_url) == ("Alpha Notes", "s3:kb", f"s3://{bucket}/notes/alpha.md")

        server.log.clear()
        again = await h.sync()
        assert (again.total("unchanged"), again.total("added"), server.log.object_gets(bucket)) == (3, 0, 0)

        put(server, bucket, {"gamma.md": "# Gamma\n\nNew words about wombats.\n", "delta.md": "# Delta\n\nFresh.\n"})
        server.client().delete_object(Bucket=bucket, Key="notes/beta.txt")
        server.log.clear()
        third = await h.sync()
        assert (third.total("updated"), third.total("added"), third.total("deleted")) == (1, 1, 1)
        assert server.log.object_gets(bucket) == 2  # the edited and the new object only
        assert await found(h, "wombats") == ["gamma.md"]
        assert await found(h, "quokkas") == []


async def test_prefix_globs_skips_and_documents(tmp_path, server, bucket, creds) -> None:
    html = "<html><head><title>Runbook</title></head><body><p>Restart the flux reactor.</p></body></html>"
    put(server, bucket, {"kb/guide.md": "# Guide\n\nAbout the yarrow.\n", "kb/drafts/wip.md": "# WIP\n\nyarrow draft\n",
                         "kb/big.md": "# Big\n\n" + "yarrow " * 200, "kb/page.html": html, "kb/tool.bin": "\x00\x01",
                         "kb/bad.md": b"\x00binary inside", "kb/sub/": b"", "outside/x.md": "# X\n\nyarrow outside\n"})
    cfg = write_config(tmp_path, server, bucket, 'prefix = "kb"\nexclude_globs = ["drafts/"]\nmax_file_size = 600\n')
    async with Harness.open(config_mod.load_file(cfg)) as h:
        report = await h.sync()
        summary = report.sources[0]
        assert (summary.added, summary.skipped_reasons) == (2, {"binary": 1, "too_large": 1})
        assert {(i.source_id, i.reason) for i in summary.skipped_items} == {("big.md", "too_large"), ("bad.md", "binary")}
        assert await found(h, "yarrow") == ["guide.md"]
        assert await found(h, "flux reactor") == ["page.html"]  # converted by the documents pipeline


async def test_a_bucket_that_vanishes_fails_clearly_and_keeps_the_documents(tmp_path, server, bucket, creds) -> None:
    put(server, bucket, {"a.md": "# A\n\nThe narwhal handbook.\n"})
    async with Harness.open(config_mod.load_file(write_config(tmp_path, server, bucket))) as h:
        assert (await h.sync()).total("added") == 1
        client = server.client()
        client.delete_object(Bucket=bucket, Key="a.md")
        client.delete_bucket(Bucket=bucket)
        with pytest.raises(NotConfigured, match=f"cannot list s3://{bucket}/: bucket '{bucket}' does not exist"):
            await h.sync()
        assert await found(h, "narwhal") == ["a.md"]  # the earlier documents are kept
        source = (await h.sources()).sources[0]
        assert (source.name, source.document_count, source.status) == ("s3:kb", 1, "failing")
        assert "does not exist" in (source.status_reason or "")


async def test_an_object_gone_after_listing_is_a_named_skip(server, bucket, creds) -> None:
    put(server, bucket, {"a.md": "# A\n\nshort-lived\n", "b.md": "# B\n\nstays\n"})
    cfg = config_mod.from_dict({"connectors": {"s3": {"kb": {
        "bucket": bucket, "endpoint_url": server.url, "access_key_id": KEY_ID, "secret_access_key": SECRET}}}}, None)
    connector = S3Connector("kb", cfg.connectors.s3["kb"])
    report = ScanReport()
    candidates = {c.source_id: c for c in connector.scan(report)}
    server.client().delete_object(Bucket=bucket, Key="a.md")
    assert candidates["a.md"].load() is None
    assert candidates["b.md"].load().body.strip() == "# B\n\nstays"  # type: ignore[union-attr]
    assert report.named == [("a.md", "vanished")]


def test_sync_interval_defaults_to_ten_minutes_like_git() -> None:
    from context_harness.connectors.base import sync_seconds
    from context_harness.connectors.kinds import default_kinds

    cfg = config_mod.from_dict({"connectors": {"s3": {"a": {"bucket": "one"},
                                                      "b": {"bucket": "two", "sync_interval": "30s"},
                                                      "c": {"bucket": "three", "sync_interval": "off"}}}}, None)
    connectors = default_kinds().build(cfg)
    assert [(c.label, sync_seconds(c)) for c in connectors] == [("s3:a", 600.0), ("s3:b", 30.0), ("s3:c", None)]


def test_keys_and_secrets_go_together() -> None:
    with pytest.raises(ConfigError, match="access_key_id and secret_access_key go together"):
        config_mod.from_dict({"connectors": {"s3": {"kb": {"bucket": "b", "access_key_id": "x"}}}}, None)
    with pytest.raises(ConfigError, match="connectors.s3.kb.bucket: required key is missing"):
        config_mod.from_dict({"connectors": {"s3": {"kb": {}}}}, None)


def test_credentials_never_show_in_logs_errors_or_sources(tmp_path, server, creds) -> None:
    """A sync that fails (no such bucket) with debug logging on, then ``sources``: the key id and the
    secret (from ``${VAR}``s) appear in no output, though botocore's debug log signs with them."""
    write_config(tmp_path, server, "no-such-bucket-here")
    failed = run_ctx("-v", "-v", "sync", cwd=tmp_path)
    sources = run_ctx("sources", "--json", cwd=tmp_path)
    assert failed.returncode != 0
    assert "cannot list s3://no-such-bucket-here/: bucket 'no-such-bucket-here' does not exist" in failed.stderr
    assert "Authorization" in failed.stderr or "Signature" in failed.stderr  # debug logging was on
    for output in (failed.stdout, failed.stderr, sources.stdout, sources.stderr):
        assert KEY_ID not in output and SECRET not in output
    assert json.loads(sources.stdout)["sources"][0]["name"] == "s3:kb"


def test_without_the_extra_the_error_names_the_install(tmp_path, server, creds) -> None:
    cfg = write_config(tmp_path, server, "any-bucket")
    script = ("import sys; sys.modules['boto3'] = None\n"  # `import boto3` now raises ImportError
              "from context_harness.cli import main\n"
              f"sys.argv = ['ctx', '--config', {str(cfg)!r}, 'sync']\nmain()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode != 0
    # the command for this install: here an editable checkout, so the running Python's pip and the checkout
    assert f"s3:kb: the S3 connector needs the s3 extra: {sys.executable} -m pip install -e '" in done.stderr
    assert "[s3]'" in done.stderr


@pytest.mark.slow  # 10,000 objects: about 65 s on 2 cores
async def test_ten_thousand_objects_then_a_no_op_then_edits(tmp_path, server, bucket, creds) -> None:
    server.fill(bucket, {f"docs/{i:05d}.md": f"# Doc {i}\n\nBody of document number {i}.\n".encode()
                         for i in range(10_000)})
    async with Harness.open(config_mod.load_file(write_config(tmp_path, server, bucket))) as h:
        first = await h.sync()
        assert (first.total("added"), server.log.object_gets(bucket)) == (10_000, 10_000)
        listings = [p for m, p in server.log.lines if m == "GET" and "list-type=2" in p]
        assert len(listings) == 10  # paginated, 1,000 keys a page
        server.log.clear()
        assert (await h.sync()).total("unchanged") == 10_000
        assert server.log.object_gets(bucket) == 0
        put(server, bucket, {f"docs/{i:05d}.md": f"# Doc {i}\n\nEdited: a kookaburra {i}.\n" for i in range(0, 10_000, 100)})
        server.log.clear()
        edited = await h.sync()
        assert (edited.total("updated"), edited.total("unchanged")) == (100, 9_900)
        assert server.log.object_gets(bucket) == 100
        assert len(await found(h, "kookaburra")) == 12  # the default result limit


@pytest.mark.slow  # a `ctx sync` subprocess and a `ctx serve` over stdio
async def test_ctx_sync_then_an_mcp_search_finds_an_object(tmp_path, server, bucket, creds) -> None:
    put(server, bucket, {"ops/pager.md": "# Pager duty\n\nThe escalation ladder starts with the capybara.\n"})
    cfg = write_config(tmp_path, server, bucket)
    synced = run_ctx("sync", cwd=tmp_path)
    assert synced.returncode == 0, synced.stderr
    assert "s3:kb: 1 added" in synced.stdout
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(cfg), "serve"],
                                   env={**os.environ, "NO_COLOR": "1"})
    with (tmp_path / "serve.stderr").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            result = await client.call_tool("search", {"query": "capybara escalation"})
    hits = result.structured_content["results"]  # type: ignore[index]
    assert [(hit["source"], hit["source_id"]) for hit in hits] == [("s3:kb", "ops/pager.md")]


def test_read_ahead_fetches_only_what_is_announced_and_passes_by_skipped_items() -> None:
    from context_harness.connectors.read_ahead import WINDOW, ReadAhead

    fetched: list[str] = []

    def get(item: str) -> str:
        fetched.append(item)
        if item == "bad":
            raise RuntimeError("GET failed")
        return item.upper()

    ahead = ReadAhead(get)
    items = [f"k{i:03d}" for i in range(WINDOW * 3)] + ["bad"]
    ahead.announce(items)
    taken = [ahead.take(item) for item in items[:5]]
    assert taken == [i.upper() for i in items[:5]]
    assert ahead.take(items[40]) == items[40].upper()  # the sync passed 5..39 by (a budget, a duplicate)
    assert ahead.take("unannounced") == "UNANNOUNCED"  # fetched there and then
    with pytest.raises(RuntimeError, match="GET failed"):
        ahead.take("bad")
    assert set(fetched) <= {*items, "unannounced"} and len(fetched) == len(set(fetched))
    assert ahead._pool is None  # all taken: no threads left behind
